package server

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// setProcAttr puts the child in a process group of its own (so the whole group can be signalled:
// vLLM starts engine-core and worker processes) and asks the kernel to send it deathSig if the
// thread that started it exits (see Supervisor.spawn).
func setProcAttr(cmd *exec.Cmd, deathSig syscall.Signal) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSig}
}

// groupAlive reports whether any live process is in the process group pgid. Zombies do not
// count: a process whose parent has died waits for init to reap it, and some container inits
// never do, so kill(-pgid, 0) could report a dead group alive for good. It scans /proc.
func groupAlive(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	dir, err := os.Open("/proc")
	if err != nil {
		return syscall.Kill(-pgid, 0) == nil
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		state, pgrp, ok := procStat(name)
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procStat reads the state and process group of /proc/<pid>/stat. The command name (field 2)
// may contain spaces and parentheses, so fields are counted from the last ')'.
func procStat(pid string) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 4 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err = strconv.Atoi(string(f[2]))
	return f[0][0], pgrp, err == nil
}
