//go:build !unix

package server

import (
	"os"
	"os/exec"
	"syscall"
)

// Without process groups and signals, only the main process can be stopped, and only by
// killing it.

func setProcAttr(*exec.Cmd, syscall.Signal) {}

func signalGroup(pid int, _ syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

func groupAlive(int) bool { return false }
