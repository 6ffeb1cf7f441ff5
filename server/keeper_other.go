//go:build !unix

package server

import "errors"

// MaybeRunKeeper does nothing on systems without process groups and signals: Supervisors
// start their servers directly. See the Unix version.
func MaybeRunKeeper() {}

func keeperUsable() bool { return false }

func withoutKeeper() Option { return func(o *options) { o.noKeeper = true } }

func (s *Supervisor) spawnKept(r *run, _ []string) error {
	err := errors.New("server: no process keeper on this system")
	s.finish(r, ExitStatus{Code: -1, Err: err, Cause: err.Error()}, err)
	return err
}
