//go:build unix && !linux

package server

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcAttr puts the child in a process group of its own. There is no parent-death signal
// outside Linux.
func setProcAttr(cmd *exec.Cmd, _ syscall.Signal) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// groupAlive reports whether the process group pgid still has members (zombies included).
func groupAlive(pgid int) bool {
	return pgid > 0 && syscall.Kill(-pgid, 0) == nil
}

// setSubreaper does nothing here: only Linux has PR_SET_CHILD_SUBREAPER, so orphans of the
// server go to init and the keeper reaches them through the process group alone.
func setSubreaper() {}

// selfExe is how to run this program again.
func selfExe() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return ""
}

// descendants is not known without /proc; the keeper relies on the process group.
func descendants(int) ([]int, bool) { return nil, false }
