//go:build unix

package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// The keeper is this program run again in a role of its own, between the Supervisor and the
// server it starts:
//
//	vllmtop ──lifeline pipe──▶ keeper (own process group, child subreaper)
//	   ▲                         │
//	   └──────report pipe────────┤ starts, in a new process group:
//	                             ▼
//	                       vllm serve ... ──▶ engine core, workers
//
// The Supervisor signals the server's process group exactly as it does without a keeper, and
// the keeper is outside that group, so a stop never touches it. What the keeper adds is what a
// parent-death signal cannot do: when vllmtop dies, however (SIGKILL, a closed terminal, a
// crash), the kernel closes the lifeline's write end, the keeper reads EOF and ends the whole
// tree: SIGTERM to the server's group and to anything of the tree that left it, the grace
// period, then SIGKILL. As a child subreaper (Linux) it also inherits the processes the server
// orphans, so an engine core whose API server died stays within reach instead of going to
// init.
//
// The report pipe carries three kinds of line: "pid N" once the server runs, "error MSG" if it
// could not be started, and "exit W" (the raw wait status) when it exits. The keeper stays
// until nothing of the tree is left (the Supervisor reaps what is left of the group, as
// always), then exits, with the server's own status as far as a process can give itself one.

// keeperEnv marks a process started as a keeper; its value is the grace period.
const keeperEnv = "VLLMTOP_PROCESS_KEEPER"

// keeperArg0 is the keeper's argv[0], which is what ps shows.
const keeperArg0 = "vllmtop-keeper"

// Keeper file descriptors: ExtraFiles start at 3.
const (
	lifelineFD = 3
	reportFD   = 4
)

var keeperReady atomic.Bool

// MaybeRunKeeper must be called first thing in main, and in TestMain of a test binary whose
// tests start Supervisors. In a process started as a keeper it runs the keeper and never
// returns. In any other process it returns at once and lets every Supervisor start its server
// through a keeper, which ends the server's whole process tree if this process dies. A program
// that never calls it still works: its Supervisors start their servers directly, protected by
// the parent-death signal alone (which reaches the server but not the processes it started).
func MaybeRunKeeper() {
	if grace, ok := os.LookupEnv(keeperEnv); ok {
		runKeeper(grace)
	}
	keeperReady.Store(true)
}

// keeperUsable reports whether Supervisors may start keepers: MaybeRunKeeper was called and
// this program can be executed again.
func keeperUsable() bool { return keeperReady.Load() && selfExe() != "" }

// withoutKeeper makes a Supervisor start its server directly, as when MaybeRunKeeper was not
// called (for tests of that path).
func withoutKeeper() Option { return func(o *options) { o.noKeeper = true } }

// spawnKept starts args through a keeper. It is spawn's counterpart and keeps its contract:
// it returns once the server runs (or could not be started), and a goroutine follows the run
// to its end.
func (s *Supervisor) spawnKept(r *run, args []string) error {
	k, err := s.keeperCommand(r, args)
	if err != nil {
		return s.keeperFailed(r, err)
	}
	started := make(chan error, 1)
	go s.followKept(r, k, started)
	return <-started
}

// kept is a server started through a keeper: the keeper's command and the pipes between them.
type kept struct {
	cmd         *exec.Cmd
	lifeW       *os.File // the lifeline: its closing (or this process's death) ends the tree
	repR        *os.File // the keeper's reports
	lifeR, repW *os.File // the keeper's ends, closed here once it runs
	out, err    *stream
}

// keeperCommand prepares the keeper for args.
func (s *Supervisor) keeperCommand(r *run, args []string) (*kept, error) {
	// The same look-up exec.Command does, in this process's PATH; the keeper gets the result.
	target := exec.Command(args[0], args[1:]...)
	if target.Err != nil {
		return nil, target.Err
	}
	k := &kept{out: s.newStream(r, Stdout), err: s.newStream(r, Stderr)}
	var err error
	if k.lifeR, k.lifeW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("server: keeper pipe: %w", err)
	}
	if k.repR, k.repW, err = os.Pipe(); err != nil {
		k.lifeR.Close()
		k.lifeW.Close()
		return nil, fmt.Errorf("server: keeper pipe: %w", err)
	}
	env := s.opts.environ()
	if env == nil {
		env = os.Environ()
	}
	k.cmd = &exec.Cmd{
		Path: selfExe(),
		Args: append([]string{keeperArg0, target.Path}, args...),
		Env:  append(append([]string(nil), env...), keeperEnv+"="+r.grace.String()),
		Dir:  s.opts.dir,
		// Its own process group: signals to the server's group never reach it. No
		// parent-death signal: it must outlive this process to clean up after it.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		ExtraFiles:  []*os.File{k.lifeR, k.repW},
		Stdout:      k.out,
		Stderr:      k.err,
		WaitDelay:   s.opts.waitDelay,
	}
	return k, nil
}

// followKept starts the keeper, says on started whether the server runs, and follows the run
// to its end.
func (s *Supervisor) followKept(r *run, k *kept, started chan<- error) {
	pid, reports, err := k.start()
	if err != nil {
		s.finish(r, ExitStatus{Code: -1, Err: err, Cause: err.Error()}, err)
		started <- err
		return
	}
	r.started(pid)
	s.mu.Lock()
	if s.run == r {
		s.status.PID = pid
	}
	s.mu.Unlock()
	started <- nil
	go s.poll(r)

	ws, known, waitErr := k.wait(r, reports)
	k.out.flush()
	k.err.flush()
	k.lifeW.Close()
	s.finish(r, s.exitStatus(r, ws, known, waitErr), nil)
}

// start runs the keeper and waits for the server's pid (or why it did not start).
func (k *kept) start() (int, <-chan string, error) {
	err := k.cmd.Start()
	k.lifeR.Close()
	k.repW.Close()
	if err != nil {
		k.lifeW.Close()
		k.repR.Close()
		return 0, nil, err
	}
	reports := readReports(k.repR)
	pid, err := firstReport(reports)
	if err != nil {
		_ = k.cmd.Wait()
		k.lifeW.Close()
		return 0, nil, err
	}
	return pid, reports, nil
}

// wait follows the server to its exit, ends what is left of its group and waits for the
// keeper. It returns the server's wait status (known false when there is none) and the error
// of waiting that matters for the exit.
func (k *kept) wait(r *run, reports <-chan string) (ws syscall.WaitStatus, known bool, _ error) {
	waited := make(chan error, 1)
	go func() { waited <- k.cmd.Wait() }()
	var (
		reported bool
		waitErr  error
		done     bool
	)
	select {
	case line, ok := <-reports:
		ws, reported = exitReport(line, ok)
	case waitErr = <-waited:
		done = true
	}
	r.cancel()
	// What is left of the group gets the usual SIGTERM, grace, SIGKILL; the keeper stays
	// meanwhile, so a death of this process now still ends them.
	r.reap()
	if !done {
		waitErr = <-waited
	}
	for line := range reports { // what came before the keeper's end
		if w, ok := exitReport(line, true); ok && !reported {
			ws, reported = w, true
		}
	}
	known = reported
	if !reported && k.cmd.ProcessState != nil {
		// The keeper ended without a word (killed): its own status is all there is.
		ws, known = k.cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	return ws, known, keeperWaitErr(waitErr, reported)
}

func (s *Supervisor) keeperFailed(r *run, err error) error {
	s.finish(r, ExitStatus{Code: -1, Err: err, Cause: err.Error()}, err)
	return err
}

// keeperWaitErr is the error of waiting for the keeper that matters for the server's exit:
// none when the keeper reported the server's status (the keeper's own exit code is only a
// copy of it).
func keeperWaitErr(err error, reported bool) error {
	var ee *exec.ExitError
	if reported && errors.As(err, &ee) {
		return nil
	}
	return err
}

// readReports delivers the keeper's report lines until the pipe closes.
func readReports(r *os.File) <-chan string {
	ch := make(chan string, 4)
	go func() {
		defer close(ch)
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 4096), 4096)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// firstReport waits for "pid N" (the server runs) or "error MSG".
func firstReport(reports <-chan string) (int, error) {
	line, ok := <-reports
	if !ok {
		return 0, errors.New("server: the process keeper exited before starting the server")
	}
	if msg, isErr := strings.CutPrefix(line, "error "); isErr {
		return 0, errors.New(msg)
	}
	if p, isPID := strings.CutPrefix(line, "pid "); isPID {
		if pid, err := strconv.Atoi(p); err == nil && pid > 0 {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("server: the process keeper said %q", line)
}

// exitReport reads "exit W".
func exitReport(line string, ok bool) (syscall.WaitStatus, bool) {
	if !ok {
		return 0, false
	}
	w, isExit := strings.CutPrefix(line, "exit ")
	if !isExit {
		return 0, false
	}
	n, err := strconv.ParseUint(w, 10, 32)
	if err != nil {
		return 0, false
	}
	return syscall.WaitStatus(n), true
}

// runKeeper is the keeper: os.Args are [keeperArg0, path, argv...]. It never returns.
func runKeeper(graceSpec string) {
	grace, err := time.ParseDuration(graceSpec)
	if err != nil || grace < 0 {
		grace = DefaultGrace
	}
	var st syscall.Stat_t
	if syscall.Fstat(lifelineFD, &st) != nil || syscall.Fstat(reportFD, &st) != nil || len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "vllmtop: the process keeper is started by vllmtop itself")
		syscall.Exit(2)
	}
	syscall.CloseOnExec(lifelineFD) // the server must not hold them
	syscall.CloseOnExec(reportFD)
	k := &keeper{report: os.NewFile(reportFD, "report"), grace: grace}
	lifeline := os.NewFile(lifelineFD, "lifeline")

	setSubreaper()
	// Signals meant for the keeper itself (someone ran kill on it) end the tree as the loss
	// of the lifeline does. Notify, not Ignore: an ignored signal stays ignored in the server.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	k.startServer()
	k.reapChildren()
	lost := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, lifeline)
		close(lost)
	}()
	k.loop(lost, sigs)
}

// keeper is the keeper's state, owned by its main goroutine (the reaper only sends).
type keeper struct {
	report   *os.File
	grace    time.Duration
	pid      int                     // the server, whose pid is its group's id
	exited   chan syscall.WaitStatus // the server's wait status, from the reaper
	none     chan struct{}           // closed when the keeper has no child left
	status   syscall.WaitStatus
	childEnd bool // the server has exited (and been reaped)
}

func (k *keeper) say(format string, a ...any) { _, _ = fmt.Fprintf(k.report, format+"\n", a...) }

// startServer starts the server in a process group of its own and reports its pid, or why it
// did not start (and exits).
func (k *keeper) startServer() {
	// The server's parent-death signal follows the thread that forks it (golang/go#27505):
	// this one, locked for good.
	runtime.LockOSThread()
	cmd := &exec.Cmd{
		Path:   os.Args[1],
		Args:   os.Args[2:],
		Env:    withoutVar(os.Environ(), keeperEnv),
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
	}
	setProcAttr(cmd, syscall.SIGKILL) // a group of its own, and (Linux) death with the keeper
	if err := cmd.Start(); err != nil {
		k.say("error %s", strings.Join(strings.Fields(err.Error()), " "))
		syscall.Exit(127)
	}
	k.pid = cmd.Process.Pid
	k.say("pid %d", k.pid)
}

// reapChildren starts the one reaper of every child: the server and the orphans the keeper
// inherits.
func (k *keeper) reapChildren() {
	k.exited = make(chan syscall.WaitStatus, 1)
	k.none = make(chan struct{})
	go func() {
		defer close(k.none)
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return // ECHILD: nothing left
			}
			if wpid == k.pid {
				k.exited <- ws
			}
		}
	}()
}

// childExited notes the server's exit if it has come, without waiting.
func (k *keeper) childExited() {
	if k.childEnd {
		return
	}
	select {
	case k.status = <-k.exited:
		k.childEnd = true
		k.say("exit %d", uint32(k.status))
	default:
	}
}

// loop waits for the server's exit, for the end of every child, for the lifeline's loss or
// for a signal, and ends the keeper accordingly.
func (k *keeper) loop(lost <-chan struct{}, sigs <-chan os.Signal) {
	var tick <-chan time.Time
	var escapees *stopper
	reaped := func() bool { k.childExited(); return k.childEnd }
	for {
		select {
		case k.status = <-k.exited:
			k.childEnd = true
			k.say("exit %d", uint32(k.status))
			tick = time.NewTicker(50 * time.Millisecond).C
		case <-k.none:
			k.childExited() // the reaper may have sent it just before it finished
			relayExit(k.status, k.childEnd)
		case <-tick:
			// What is left of the group is the Supervisor's to end. Processes that left the
			// group are out of its sight: they get the same treatment from here, on the same
			// schedule (SIGTERM now that the server has exited, SIGKILL after the grace).
			if escapees == nil {
				escapees = &stopper{pgid: k.pid, grace: k.grace}
			}
			escapees.step(k.childEnd)
		case <-lost:
			endTree(k.pid, k.grace, k.none, reaped)
			k.childExited()
			relayExit(k.status, k.childEnd)
		case <-sigs:
			endTree(k.pid, k.grace, k.none, reaped)
			k.childExited()
			relayExit(k.status, k.childEnd)
		}
	}
}

// endTree ends everything the keeper started: SIGTERM to the server's group and to every
// other descendant, then SIGKILL to whatever is left after the grace period. It returns when
// nothing is left (none is closed) or SIGKILL has had killWait to work. reaped reports
// whether the server has been reaped.
func endTree(pgid int, grace time.Duration, none <-chan struct{}, reaped func() bool) {
	st := &stopper{pgid: pgid, grace: grace, group: true}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		st.step(reaped())
		if st.killedFor() > killWait {
			return
		}
		select {
		case <-none:
			return
		case <-t.C:
		}
	}
}

// stopper sends SIGTERM, then after the grace period SIGKILL: with group set, to the server's
// process group as a whole (which also reaches a process forked a moment ago) and to every
// other descendant of the keeper; without, only to the descendants outside the group.
type stopper struct {
	pgid     int
	group    bool
	grace    time.Duration
	termAt   time.Time
	killedAt time.Time
}

// step signals what is due; reaped says whether the server has been reaped.
func (s *stopper) step(reaped bool) {
	now := time.Now()
	switch {
	case s.termAt.IsZero():
		s.termAt = now
		s.signal(syscall.SIGTERM, reaped)
	case now.Sub(s.termAt) >= s.grace:
		if s.killedAt.IsZero() {
			s.killedAt = now
		}
		s.signal(syscall.SIGKILL, reaped) // again at every step: late forks get it too
	}
}

func (s *stopper) killedFor() time.Duration {
	if s.killedAt.IsZero() {
		return 0
	}
	return time.Since(s.killedAt)
}

func (s *stopper) signal(sig syscall.Signal, reaped bool) {
	ds, _ := descendants(os.Getpid())
	// The group id is the server's pid. It cannot have been reused while the server is not
	// reaped or one of the keeper's descendants is still in the group; otherwise another
	// program may own a group of that number now, and it must not be signalled.
	ours := !reaped
	inGroup := make(map[int]bool, len(ds))
	for _, p := range ds {
		if g, err := syscall.Getpgid(p); err == nil && g == s.pgid {
			inGroup[p], ours = true, true
		}
	}
	grouped := s.group && ours && signalGroup(s.pgid, sig) == nil
	for _, p := range ds {
		if inGroup[p] && (grouped || !s.group) {
			continue // signalled with the group, or left to the Supervisor
		}
		_ = syscall.Kill(p, sig)
	}
}

// relayExit ends the keeper with the server's status as far as a process can: the same exit
// code, or death by the same signal for the signals Go lets a program die of (others give
// 128+n, as a shell reports them). The Supervisor reads the reported status, not this one.
func relayExit(ws syscall.WaitStatus, known bool) {
	switch {
	case !known:
		syscall.Exit(1)
	case ws.Exited():
		syscall.Exit(ws.ExitStatus())
	case ws.Signaled():
		sig := ws.Signal()
		switch sig {
		case syscall.SIGKILL, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM:
			signal.Reset(sig)
			_ = syscall.Kill(os.Getpid(), sig)
			time.Sleep(time.Second) // the signal is on its way; this never returns
		}
		syscall.Exit(128 + int(sig))
	}
	syscall.Exit(1)
}

// withoutVar returns env without the variable name.
func withoutVar(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
