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

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// setSubreaper makes this process the child subreaper of its descendants: a process whose
// parent dies is reparented to it rather than to init, so the keeper keeps the whole tree.
func setSubreaper() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
}

// selfExe is how to run this program again: /proc/self/exe works even when the file was
// replaced or deleted since it started.
func selfExe() string {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe"
	}
	if p, err := os.Executable(); err == nil {
		return p
	}
	return ""
}

// descendants lists the live processes below root in the process tree (children, their
// children, ...), from /proc; ok is false when /proc cannot be read.
func descendants(root int) (pids []int, ok bool) {
	names, err := readProcNames()
	if err != nil {
		return nil, false
	}
	children := map[int][]int{}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		state, ppid, _, ok := procStatFull(name)
		if ok && state != 'Z' && state != 'X' {
			children[ppid] = append(children[ppid], pid)
		}
	}
	queue := children[root]
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		pids = append(pids, p)
		queue = append(queue, children[p]...)
	}
	return pids, true
}

func readProcNames() ([]string, error) {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return dir.Readdirnames(-1)
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

// procStat reads the state and process group of /proc/<pid>/stat.
func procStat(pid string) (state byte, pgrp int, ok bool) {
	state, _, pgrp, ok = procStatFull(pid)
	return state, pgrp, ok
}

// procStatFull reads the state, parent and process group of /proc/<pid>/stat. The command
// name (field 2) may contain spaces and parentheses, so fields are counted from the last ')'.
func procStatFull(pid string) (state byte, ppid, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 4 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	return f[0][0], ppid, pgrp, err1 == nil && err2 == nil
}
