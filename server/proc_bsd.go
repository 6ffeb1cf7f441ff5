//go:build unix && !linux

package server

import (
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
