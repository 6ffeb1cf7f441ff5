// Package outfile opens the files a command writes for the user (results, records, plots)
// so that nothing already there is lost: an existing file is kept unless the caller was asked
// to replace or extend it, a symbolic link at the path is never followed, and a name built
// from a label cannot leave its directory. Check makes the same decisions before a run, so
// that a bad path costs nothing.
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Mode says what happens to a file already at the path.
type Mode int

const (
	New       Mode = iota // refuse it
	Overwrite             // replace it (a regular file only)
	Append                // write after its end (a regular file only)
)

// Options says how a file is opened.
type Options struct {
	Mode Mode
	// Hint is how the user asks to replace a file, for the error that refuses one:
	// "give --overwrite to replace it".
	Hint string
	Perm fs.FileMode // 0 is 0o644
}

// ErrExists is the error that refuses an existing file (see Options.Hint).
var ErrExists = errors.New("exists")

// ErrLink is the error that refuses a symbolic link (or another non-regular file) at the path.
var ErrLink = errors.New("is a symbolic link or not a regular file: refused")

// Create opens path for writing as opts say, creating its directory. It never follows a
// symbolic link at path, and a new file is created exclusively (O_EXCL), so a file or link
// that appears meanwhile is not written through.
func Create(path string, opts Options) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	flags := os.O_WRONLY | os.O_CREATE | syscall.O_NOFOLLOW
	if opts.Mode != New {
		if err := existing(path, opts); err != nil {
			return nil, err
		}
	}
	switch opts.Mode {
	case New:
		flags |= os.O_EXCL
	case Overwrite:
		flags |= os.O_TRUNC
	case Append: // readable too, so that the caller can see how the file ends
		flags = flags&^os.O_WRONLY | os.O_RDWR | os.O_APPEND
	}
	perm := opts.Perm
	if perm == 0 {
		perm = 0o644
	}
	f, err := os.OpenFile(path, flags, perm)
	switch {
	case errors.Is(err, fs.ErrExist): // O_EXCL: a file, or a link, is there
		if lerr := existing(path, Options{Hint: opts.Hint}); lerr != nil {
			return nil, lerr
		}
		return nil, refuse(path, opts)
	case errors.Is(err, syscall.ELOOP):
		return nil, &fs.PathError{Op: "write", Path: path, Err: ErrLink}
	}
	return f, err
}

// WriteFile writes data to path through Create.
func WriteFile(path string, data []byte, opts Options) error {
	f, err := Create(path, opts)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Check says, without writing path, whether Create would refuse it: its directory is created
// when missing and must take a new file, and what is at path must suit opts. Errors from the
// path itself (one that exists, a link) wrap ErrExists or ErrLink; the others are the system's.
func Check(path string, opts Options) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	probe, err := os.CreateTemp(dir, ".vllmtop-check-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, unwrapPath(err))
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	return existing(path, opts)
}

// existing checks what is at path: nothing, or a regular file that opts may replace or extend.
func existing(path string, opts Options) error {
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !info.Mode().IsRegular():
		return &fs.PathError{Op: "write", Path: path, Err: ErrLink}
	case opts.Mode == New:
		return refuse(path, opts)
	}
	return nil
}

func refuse(path string, opts Options) error {
	if opts.Hint != "" {
		return fmt.Errorf("%s %w: %s", path, ErrExists, opts.Hint)
	}
	return fmt.Errorf("%s %w", path, ErrExists)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Refused reports whether err refuses the path itself (ErrExists, ErrLink, ErrOutside): the
// command line asked for it, as opposed to a directory the system will not let be written.
func Refused(err error) bool {
	return errors.Is(err, ErrExists) || errors.Is(err, ErrLink) || errors.Is(err, ErrOutside)
}

// ErrOutside is the error that refuses a name leading out of its directory.
var ErrOutside = errors.New("leads out of its directory: refused")

// Within joins dir and name (a file name, or a relative path below dir) and refuses a name
// that is absolute or whose path leads out of dir ("../f", "a/../../f").
func Within(dir, name string) (string, error) {
	if dir == "" {
		dir = "."
	}
	if filepath.IsAbs(name) {
		return "", fmt.Errorf("%s %w", name, ErrOutside)
	}
	joined := filepath.Join(dir, name)
	rel, err := filepath.Rel(dir, joined)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s %w", name, ErrOutside)
	}
	return joined, nil
}
