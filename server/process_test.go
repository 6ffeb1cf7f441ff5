//go:build linux

package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/testport"
	"github.com/vllmtop/vllmtop/server/sim"
)

// The process tests run real children: `vllmtop sim` (built once, on first use) and this test
// binary re-executed in a helper role chosen by roleEnv.
const (
	roleEnv     = "VLLMTOP_SERVER_TEST_ROLE"
	roleArgsEnv = "VLLMTOP_SERVER_TEST_ARGS"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	// Supervisors in these tests, and in the helper roles that run one, start their children
	// through a keeper: this test binary, run again.
	MaybeRunKeeper()
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(playRole(role))
	}
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// vllmtopBinary builds the module's main package once per test process.
func vllmtopBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "vllmtop-server-test-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "vllmtop")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "github.com/vllmtop/vllmtop")...).CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// playRole is the test binary acting as a child process. It returns the exit code.
func playRole(role string) int {
	switch role {
	case "ignore-term": // a server that ignores SIGTERM
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		sleepForever()
	case "grandchild": // started by "fork" and "orphan"; ignores SIGTERM too
		signal.Ignore(syscall.SIGTERM)
		fmt.Fprintln(os.Stderr, "ready")
		sleepForever()
	case "fork", "orphan", "fork-setsid":
		pid, err := startGrandchild(role == "fork-setsid")
		if err != nil {
			fmt.Println("cannot start the grandchild:", err)
			return 2
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		fmt.Printf("grandchild pid=%d\n", pid)
		if role == "orphan" { // crash, leaving the grandchild behind
			fmt.Fprintln(os.Stderr, "Traceback (most recent call last):")
			fmt.Fprintln(os.Stderr, "RuntimeError: boom")
			fmt.Fprintln(os.Stderr, "the end")
			return 3
		}
		<-ctx.Done()
		fmt.Println("child: SIGTERM, exiting")
		return 0
	case "clean-exit": // a server that ends on its own, cleanly, its last line an access log's
		fmt.Println(`INFO:     127.0.0.1:37030 - "POST /v1/completions HTTP/1.1" 200 OK`)
		return 0
	case "hostile-log": // control characters and escapes in its output, then a failure
		fmt.Print("\x1b]0;pwned\x07INFO retitled\n")
		fmt.Print("back\bspace bell\a c1 \u009b2J bidi \u202eevil\n")
		fmt.Fprint(os.Stderr, "ValueError: No available memory for the cache blocks.\x1b[2J\u202e Try increasing `gpu_memory_utilization`.\n")
		return 1
	case "flood": // 10 MiB without a line end, then tqdm-style progress on stderr
		fmt.Println("flood start")
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for range 160 {
			if _, err := os.Stdout.Write(chunk); err != nil {
				return 2
			}
		}
		for pct := 0; pct <= 100; pct += 10 {
			fmt.Fprintf(os.Stderr, "\rLoading: %3d%%", pct)
		}
		fmt.Fprintln(os.Stderr)
		fmt.Println("\nflood done")
		return 0
	case "vllmtop", "vllmtop-nohup": // supervises roleArgsEnv as vllmtop does; see keeper_test.go
		return playVLLMTop(role == "vllmtop")
	case "parent": // supervises the command in roleArgsEnv, prints its pid once ready
		args := strings.Split(os.Getenv(roleArgsEnv), "\x1f")
		s, err := New(args, WithEnv(childEnv()), WithHealthInterval(50*time.Millisecond))
		if err != nil {
			fmt.Println(err)
			return 2
		}
		go func() {
			for range s.Events() {
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Start(ctx); err != nil {
			fmt.Println(err)
			return 2
		}
		if err := s.WaitReady(ctx); err != nil {
			fmt.Println(err)
			return 2
		}
		fmt.Printf("child pid=%d\n", s.Status().PID)
		sleepForever()
	}
	fmt.Fprintln(os.Stderr, "unknown role", role)
	return 2
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// startGrandchild starts the "grandchild" role on our stdout (it keeps the supervisor's pipe
// open) and waits until it ignores SIGTERM. With setsid it leaves our process group (and
// session), as a daemon would.
func startGrandchild(setsid bool) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self)
	cmd.Env = childEnv(roleEnv + "=grandchild")
	if setsid {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	cmd.Stdout = os.Stdout
	ready, err := cmd.StderrPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	if _, err := bufio.NewReader(ready).ReadString('\n'); err != nil {
		return 0, err
	}
	return cmd.Process.Pid, nil
}

// helperArgs runs this test binary in a role. The port is one nobody listens on, so /health
// probes fail harmlessly.
func helperArgs(t *testing.T, role string) ([]string, Option) {
	self, err := os.Executable()
	require.NoError(t, err)
	return []string{self, "--port", freePort(t)}, WithEnv(childEnv(roleEnv + "=" + role))
}

// childEnv is our environment plus extra. A race-enabled binary sleeps a second before it
// exits (the race runtime's atexit_sleep_ms), which would blur every timing in these tests.
func childEnv(extra ...string) []string {
	env := append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return append(env, extra...)
}

func freePort(t *testing.T) string { return strconv.Itoa(testport.Free(t)) }

// alive reports whether pid is a live process (a zombie is dead: some container inits never
// reap orphans).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// groupMembers lists the live processes of a process group.
func groupMembers(pgid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// requireGone waits (bounded) until pid and its process group have no live process.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool { return !alive(pid) && len(groupMembers(pid)) == 0 },
		5*time.Second, 10*time.Millisecond, "process %d or its group is still alive: %v", pid, groupMembers(pid))
}

// recorder keeps every event of a Supervisor.
type recorder struct {
	mu     sync.Mutex
	events []Event
	more   chan struct{} // closed and replaced on every event
	done   chan struct{} // closed when Events is closed
}

func record(s *Supervisor) *recorder {
	r := &recorder{more: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ev := range s.Events() {
			r.mu.Lock()
			r.events = append(r.events, ev)
			close(r.more)
			r.more = make(chan struct{})
			r.mu.Unlock()
		}
	}()
	return r
}

// waitFor returns the first event so far or to come for which match is true.
func (r *recorder) waitFor(t *testing.T, what string, timeout time.Duration, match func(Event) bool) Event {
	t.Helper()
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		for _, ev := range r.events {
			if match(ev) {
				r.mu.Unlock()
				return ev
			}
		}
		more := r.more
		r.mu.Unlock()
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("no %s within %v; states so far: %v", what, timeout, r.states())
		}
	}
}

func (r *recorder) waitState(t *testing.T, st State, timeout time.Duration) StateChanged {
	t.Helper()
	return r.waitFor(t, st.String(), timeout, func(ev Event) bool {
		sc, ok := ev.(StateChanged)
		return ok && sc.State == st
	}).(StateChanged)
}

func (r *recorder) waitLine(t *testing.T, substr string, timeout time.Duration) Line {
	t.Helper()
	var found Line
	r.waitFor(t, fmt.Sprintf("line %q", substr), timeout, func(ev Event) bool {
		if b, ok := ev.(LogBatch); ok {
			for _, l := range b.Lines {
				if strings.Contains(l.Text, substr) {
					found = l
					return true
				}
			}
		}
		return false
	})
	return found
}

func (r *recorder) states() []State {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []State
	for _, ev := range r.events {
		if sc, ok := ev.(StateChanged); ok {
			out = append(out, sc.State)
		}
	}
	return out
}

// supervise builds a Supervisor, records its events, and closes it at the end of the test.
func supervise(t *testing.T, args []string, opts ...Option) (*Supervisor, *recorder) {
	t.Helper()
	s, err := New(args, opts...)
	require.NoError(t, err)
	rec := record(s)
	t.Cleanup(func() {
		assert.NoError(t, s.Close())
		select {
		case <-rec.done:
		case <-time.After(10 * time.Second):
			t.Error("Events was not closed after Close")
		}
	})
	return s, rec
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

const simModel = "Qwen/Qwen3-0.6B"

func simArgs(t *testing.T, port string, extra ...string) []string {
	return append([]string{vllmtopBinary(t), "sim", simModel, "--port", port, "--sim-startup-seconds", "0.2"}, extra...)
}

// withoutLoading drops Loading, which a run may pass through too fast to be seen.
func withoutLoading(states []State) []State {
	var out []State
	for _, st := range states {
		if st != Loading {
			out = append(out, st)
		}
	}
	return out
}

// predicted is the engine's capacity for the simulated model at a utilisation.
func predicted(t *testing.T, util float64) sim.Capacity {
	setup, err := sim.Resolve(sim.Config{Model: simModel, GPUMemoryUtilization: util}, nil)
	require.NoError(t, err)
	return setup.Capacity
}

func TestSimStartReadyStop(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	// A longer imitated load: /health answers 503 for half a second, so the probes (every
	// 50 ms) see it even on a busy machine.
	args := EditArgs(simArgs(t, port, "--gpu-memory-utilization", "0.5"), Set("--sim-startup-seconds", "0.5"))
	s, rec := supervise(t, args,
		WithEnv(childEnv()), WithGrace(2*time.Second), WithHealthInterval(50*time.Millisecond))
	ctx := testContext(t)
	require.NoError(t, s.Start(ctx))
	require.NoError(t, s.WaitReady(ctx))
	assert.Equal(t, Ready, s.State())
	rec.waitState(t, Ready, 5*time.Second)
	assert.Equal(t, []State{Starting, Loading, Ready}, rec.states(), "/health answered 503 while the model loaded")

	want := predicted(t, 0.5)
	kv := rec.waitFor(t, "KV cache size", 5*time.Second, func(ev Event) bool { _, ok := ev.(KVCacheSize); return ok })
	size := kv.(KVCacheSize)
	assert.Equal(t, want.KVCacheTokens, size.Tokens)
	assert.InDelta(t, want.MaxConcurrency, size.Concurrency, 0.005, "the current release logs the concurrency on the same line")
	assert.Equal(t, 40960, size.TokensPerRequest)
	rec.waitFor(t, "model loaded", 5*time.Second, func(ev Event) bool { _, ok := ev.(ModelLoaded); return ok })
	rec.waitFor(t, "startup complete", 5*time.Second, func(ev Event) bool { _, ok := ev.(StartupComplete); return ok })
	addr := rec.waitFor(t, "address", 5*time.Second, func(ev Event) bool { _, ok := ev.(ServerAddress); return ok })
	assert.Equal(t, ServerAddress{URL: "http://127.0.0.1:" + port}, addr)

	st := s.Status()
	assert.Equal(t, want.KVCacheTokens, st.KVCacheTokens)
	assert.InDelta(t, want.MaxConcurrency, st.MaxConcurrency, 0.005)
	assert.Equal(t, 40960, st.MaxModelLen)
	assert.Equal(t, "http://127.0.0.1:"+port, st.URL)
	assert.Greater(t, st.KVCacheGiB, 0.0)
	assert.Greater(t, st.ModelGiB, 0.0)
	pid := st.PID
	require.True(t, alive(pid))

	require.NoError(t, s.Stop(ctx))
	exit := rec.waitState(t, Exited, 5*time.Second).Exit
	assert.Equal(t, 0, exit.Code, "vLLM exits 0 on SIGTERM")
	assert.True(t, exit.Requested)
	assert.False(t, exit.Killed)
	assert.Empty(t, exit.Cause)
	assert.False(t, exit.Failed())
	assert.Equal(t, []State{Starting, Loading, Ready, Stopping, Exited}, rec.states())
	requireGone(t, pid)
	rec.waitLine(t, "Application shutdown complete.", 5*time.Second)
}

func TestSimRestartWithAnotherUtilisation(t *testing.T) {
	t.Parallel()
	s, rec := supervise(t, simArgs(t, freePort(t), "--gpu-memory-utilization=0.5"),
		WithEnv(childEnv()), WithGrace(2*time.Second), WithHealthInterval(50*time.Millisecond))
	ctx := testContext(t)
	require.NoError(t, s.Start(ctx))
	require.NoError(t, s.WaitReady(ctx))
	low, high := predicted(t, 0.5), predicted(t, 0.8)
	require.Greater(t, high.KVCacheTokens, low.KVCacheTokens)
	require.Eventually(t, func() bool { return s.Status().KVCacheTokens == low.KVCacheTokens }, 5*time.Second, 5*time.Millisecond)
	firstPID := s.Status().PID

	require.NoError(t, s.Restart(ctx, Set("--gpu-memory-utilization", "0.8")))
	assert.Equal(t, Ready, s.State())
	assert.Contains(t, strings.Join(s.Args(), " "), "--gpu-memory-utilization 0.8")
	assert.NotContains(t, strings.Join(s.Args(), " "), "0.5")
	require.Eventually(t, func() bool { st := s.Status(); return st.KVCacheTokens == high.KVCacheTokens && st.MaxConcurrency > 0 }, 5*time.Second, 5*time.Millisecond,
		"the restarted engine reports the KV cache the engine predicts for 0.8")
	st := s.Status()
	assert.Equal(t, 2, st.Run)
	assert.InDelta(t, high.MaxConcurrency, st.MaxConcurrency, 0.005)
	assert.NotEqual(t, firstPID, st.PID)
	requireGone(t, firstPID)

	// The status is folded before the event reaches the recorder: wait for the event itself.
	rec.waitFor(t, "the restarted engine's KV cache event", 5*time.Second, func(ev Event) bool {
		kv, ok := ev.(KVCacheSize)
		return ok && kv.Tokens == high.KVCacheTokens
	})
	var tokens []int
	rec.mu.Lock()
	for _, ev := range rec.events {
		if kv, ok := ev.(KVCacheSize); ok {
			tokens = append(tokens, kv.Tokens)
		}
	}
	rec.mu.Unlock()
	assert.Equal(t, []int{low.KVCacheTokens, high.KVCacheTokens}, tokens)
	rec.waitFor(t, "the second Ready", 5*time.Second, func(ev Event) bool {
		sc, ok := ev.(StateChanged)
		return ok && sc.Run == 2 && sc.State == Ready
	})
	assert.Equal(t, []State{Starting, Ready, Stopping, Exited, Starting, Ready}, withoutLoading(rec.states()))
}

func TestSimStartupFailureExitsWithVLLMsCause(t *testing.T) {
	t.Parallel()
	args := []string{vllmtopBinary(t), "sim", "meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4",
		"--gpu-memory-utilization", "0.5", "--port", freePort(t), "--sim-startup-seconds", "0.2"}
	s, rec := supervise(t, args, WithEnv(childEnv()), WithHealthInterval(50*time.Millisecond))
	ctx := testContext(t)
	require.NoError(t, s.Start(ctx))
	err := s.WaitReady(ctx)
	var ee *ExitError
	require.ErrorAs(t, err, &ee)
	exit := ee.Status
	assert.Equal(t, 1, exit.Code)
	assert.False(t, exit.Requested)
	assert.True(t, exit.Failed())
	assert.Equal(t, KVCacheNoMemory, exit.Reason)
	assert.True(t, strings.HasPrefix(exit.Cause, "ValueError: No available memory for the cache blocks."), exit.Cause)

	sc := rec.waitState(t, Exited, 5*time.Second)
	assert.Equal(t, exit, sc.Exit)
	var lastErr Line
	for _, l := range s.Logs(0) {
		if l.Stream == Stderr {
			lastErr = l
		}
	}
	assert.Contains(t, lastErr.Text, "RuntimeError: Engine core initialization failed", "the last line is not the cause")
	var reasons []FatalReason
	for _, f := range s.Status().Fatal {
		reasons = append(reasons, f.Reason)
	}
	// The logged traceback (stdout) and Python's (stderr) interleave in no fixed order.
	assert.ElementsMatch(t, []FatalReason{EngineFailed, KVCacheNoMemory, KVCacheNoMemory, EngineFailed}, reasons)

	// What an engineer does next: more memory, which now fails on the context length and says
	// what would fit; then that length, which starts.
	err = s.Restart(ctx, Set("--gpu-memory-utilization", "0.9"))
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, MaxModelLenTooLarge, ee.Status.Reason)
	var fit int
	for _, f := range s.Status().Fatal {
		if f.Reason == MaxModelLenTooLarge {
			fit = f.EstimatedMaxModelLen
		}
	}
	require.Positive(t, fit)
	require.NoError(t, s.Restart(ctx, Set("--max-model-len", strconv.Itoa(fit))))
	setup, err := sim.Resolve(sim.Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", GPUMemoryUtilization: 0.9, MaxModelLen: fit}, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.Status().KVCacheTokens == setup.Capacity.KVCacheTokens }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, 3, s.Status().Run)
}

func TestStopKillsAChildThatIgnoresSIGTERM(t *testing.T) {
	t.Parallel()
	args, env := helperArgs(t, "ignore-term")
	const grace = 300 * time.Millisecond
	s, rec := supervise(t, args, env, WithGrace(grace))
	ctx := testContext(t)
	require.NoError(t, s.Start(ctx))
	rec.waitLine(t, "ignoring SIGTERM", 10*time.Second)
	pid := s.Status().PID

	start := time.Now()
	require.NoError(t, s.Stop(ctx))
	elapsed := time.Since(start)
	assert.GreaterOrEqual(t, elapsed, grace, "SIGKILL only after the grace period")
	assert.Less(t, elapsed, grace+3*time.Second)
	exit := s.Status().Exit
	assert.True(t, exit.Killed)
	assert.True(t, exit.Requested)
	assert.Equal(t, syscall.SIGKILL, exit.Signal)
	assert.Equal(t, -1, exit.Code)
	assert.Empty(t, exit.Cause)
	requireGone(t, pid)
}

func TestStopLeavesNoGrandchild(t *testing.T) {
	t.Parallel()
	args, env := helperArgs(t, "fork")
	const grace = 300 * time.Millisecond
	s, rec := supervise(t, args, env, WithGrace(grace), WithWaitDelay(time.Second))
	ctx := testContext(t)
	require.NoError(t, s.Start(ctx))
	line := rec.waitLine(t, "grandchild pid=", 10*time.Second)
	gpid, err := strconv.Atoi(strings.TrimPrefix(line.Text, "grandchild pid="))
	require.NoError(t, err)
	pid := s.Status().PID
	require.True(t, alive(gpid))
	require.ElementsMatch(t, []int{pid, gpid}, groupMembers(pid))

	start := time.Now()
	require.NoError(t, s.Stop(ctx))
	assert.Less(t, time.Since(start), grace+time.Second+3*time.Second, "within grace plus the wait delay")
	exit := s.Status().Exit
	assert.Equal(t, 0, exit.Code, "the child itself exits on SIGTERM")
	assert.True(t, exit.Killed, "the grandchild needed SIGKILL")
	assert.False(t, alive(gpid), "Stop returns only when the group is gone")
	requireGone(t, pid)
	requireGone(t, gpid)
	rec.waitLine(t, "child: SIGTERM, exiting", 5*time.Second)
}

func TestCrashedChildLeavesNoOrphan(t *testing.T) {
	t.Parallel()
	args, env := helperArgs(t, "orphan")
	s, rec := supervise(t, args, env, WithGrace(300*time.Millisecond), WithWaitDelay(200*time.Millisecond))
	ctx := testContext(t)
	require.NoError(t, s.Start(ctx))
	line := rec.waitLine(t, "grandchild pid=", 10*time.Second)
	gpid, err := strconv.Atoi(strings.TrimPrefix(line.Text, "grandchild pid="))
	require.NoError(t, err)

	exit := rec.waitState(t, Exited, 10*time.Second).Exit
	assert.Equal(t, 3, exit.Code)
	assert.False(t, exit.Requested)
	assert.Equal(t, "RuntimeError: boom", exit.Cause, "the exception, not the last line")
	assert.True(t, exit.Killed, "the orphan ignored SIGTERM")
	assert.False(t, alive(gpid), "Exited means the whole group is gone")
	requireGone(t, gpid)
}

func TestLongLinesAndCarriageReturnsDoNotStallTheChild(t *testing.T) {
	t.Parallel()
	args, env := helperArgs(t, "flood")
	s, err := New(args, env, WithMaxLineBytes(4096))
	require.NoError(t, err)
	ctx := testContext(t)
	require.NoError(t, s.Start(ctx))
	// Nobody reads Events while the child writes: the pipes are drained regardless.
	select {
	case <-s.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the child stalled writing 10 MiB")
	}
	st := s.Status()
	assert.Equal(t, 0, st.Exit.Code)
	assert.Equal(t, Exited, st.State)

	var texts []string
	var long *Line
	for _, l := range s.Logs(0) {
		if l.Truncated {
			long = &l
		}
		texts = append(texts, l.Text)
	}
	require.NotNil(t, long, "the 10 MiB line is kept, truncated")
	assert.Len(t, long.Raw, 4096)
	assert.Equal(t, Stdout, long.Stream)
	assert.Contains(t, texts, "flood done")
	assert.Contains(t, texts, "Loading:   0%")
	assert.Contains(t, texts, "Loading: 100%")

	rec := record(s)
	require.NoError(t, s.Close())
	select {
	case <-rec.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Events not closed")
	}
	assert.Equal(t, []State{Starting, Exited}, rec.states())
}

func TestParentKilledLeavesNoChild(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	require.NoError(t, err)
	child := simArgs(t, freePort(t))
	parent := exec.Command(self)
	parent.Env = childEnv(roleEnv+"=parent", roleArgsEnv+"="+strings.Join(child, "\x1f"))
	out, err := parent.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, parent.Start())
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })

	pidc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "child pid="); ok {
				pidc <- p
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	var pid int
	select {
	case p := <-pidc:
		pid, err = strconv.Atoi(p)
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the parent did not report its child")
	}
	require.True(t, alive(pid))

	require.NoError(t, parent.Process.Signal(syscall.SIGKILL))
	_ = parent.Wait()
	requireGone(t, pid)
}

func TestPortZeroIsTakenFromTheLog(t *testing.T) {
	t.Parallel()
	s, _ := supervise(t, simArgs(t, "0"), WithEnv(childEnv()), WithHealthInterval(50*time.Millisecond))
	ctx := testContext(t)
	require.NoError(t, s.Start(ctx))
	require.NoError(t, s.WaitReady(ctx))
	st := s.Status()
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+$`, st.URL)
	assert.NotEqual(t, "http://127.0.0.1:0", st.URL)
	assert.Equal(t, strings.Replace(st.ListenURL, "0.0.0.0", "127.0.0.1", 1), st.URL)
}

func TestStartRefusesAnAddressInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	s, rec := supervise(t, simArgs(t, port), WithEnv(childEnv()))
	err = s.Start(testContext(t))
	require.ErrorIs(t, err, ErrAddressInUse)
	exit := rec.waitState(t, Exited, 5*time.Second).Exit
	assert.Equal(t, -1, exit.Code)
	assert.Contains(t, exit.Cause, "127.0.0.1:"+port)
	assert.Zero(t, s.Status().PID, "nothing was started")
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	_, err := New(nil)
	assert.Error(t, err)

	s, rec := supervise(t, []string{"/nonexistent/vllm", "serve"})
	ctx := testContext(t)
	assert.ErrorIs(t, s.WaitReady(ctx), ErrNotStarted)
	assert.NoError(t, s.Stop(ctx), "stopping what is not running is not an error")
	err = s.Start(ctx)
	require.Error(t, err)
	assert.Equal(t, Exited, s.State())
	var ee *ExitError
	require.ErrorAs(t, s.WaitReady(ctx), &ee)
	assert.Equal(t, -1, ee.Status.Code)
	assert.Error(t, ee.Status.Err)
	assert.Contains(t, ee.Status.Cause, "/nonexistent/vllm")
	rec.waitState(t, Exited, 5*time.Second)
	assert.Equal(t, []State{Starting, Exited}, rec.states())

	args, env := helperArgs(t, "ignore-term")
	s2, rec2 := supervise(t, args, env, WithGrace(100*time.Millisecond))
	require.NoError(t, s2.Start(ctx))
	assert.ErrorIs(t, s2.Start(ctx), ErrRunning)
	rec2.waitLine(t, "ignoring SIGTERM", 10*time.Second)
	require.NoError(t, s2.Kill(), "Kill does not wait")
	exit := rec2.waitState(t, Exited, 5*time.Second).Exit
	assert.True(t, exit.Killed)
	assert.Equal(t, syscall.SIGKILL, exit.Signal)
	require.NoError(t, s2.Close())
	assert.ErrorIs(t, s2.Start(ctx), ErrClosed)
}

// TestNoGoroutineOutlivesClose runs alone (it is not parallel), so the goroutine count is ours.
func TestNoGoroutineOutlivesClose(t *testing.T) {
	bin := vllmtopBinary(t)
	before := runtime.NumGoroutine()
	s, err := New([]string{bin, "sim", simModel, "--port", freePort(t), "--sim-startup-seconds", "0.1"},
		WithEnv(childEnv()), WithHealthInterval(20*time.Millisecond), WithGrace(2*time.Second))
	require.NoError(t, err)
	rec := record(s)
	ctx := testContext(t)
	require.NoError(t, s.Start(ctx))
	require.NoError(t, s.WaitReady(ctx))
	require.NoError(t, s.Restart(ctx, Set("--max-num-seqs", "64")))
	require.NoError(t, s.Close())
	select {
	case <-rec.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Events not closed")
	}
	// Polled by hand: require.Eventually runs its condition on a goroutine of its own.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for runtime.NumGoroutine() > before {
		select {
		case <-tick.C:
		case <-deadline:
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
	}
}

// A server that exits 0 on its own (a SIGTERM from elsewhere that it handled) has no cause:
// its last line is whatever it printed last, an access log line here.
func TestCleanExitHasNoCause(t *testing.T) {
	t.Parallel()
	exit, _ := runToExit(t, "clean-exit")
	assert.Equal(t, 0, exit.Code)
	assert.False(t, exit.Requested)
	assert.Empty(t, exit.Cause)
	assert.Equal(t, "exit status 0", exit.String())
}

// runToExit supervises the helper playing role until it exits on its own.
func runToExit(t *testing.T, role string) (ExitStatus, *Supervisor) {
	t.Helper()
	args, env := helperArgs(t, role)
	s, rec := supervise(t, args, env)
	require.NoError(t, s.Start(testContext(t)))
	return rec.waitState(t, Exited, 10*time.Second).Exit, s
}
