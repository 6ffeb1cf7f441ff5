//go:build linux

package main

// The dashboard as a user runs it, in a pseudo-terminal, ended by SIGTERM, SIGINT or SIGHUP in
// every mode: it must exit by itself within the grace period, restore the terminal and leave
// nothing of the server tree behind.

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server"
)

// openPTY opens a pseudo-terminal pair of 120x40 cells.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	ioctl := func(req uintptr, arg unsafe.Pointer) {
		_, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), req, uintptr(arg))
		if e != 0 {
			t.Fatalf("ioctl %#x: %v", req, e)
		}
	}
	var n uint32
	ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n))
	var unlock int32
	ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	ws := [4]uint16{40, 120, 0, 0}
	ioctl(syscall.TIOCSWINSZ, unsafe.Pointer(&ws))
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	return m, s
}

// buildDashboard builds vllmtop into dir, as a user's build (with its keeper).
func buildDashboard(t *testing.T, dir string) string {
	t.Helper()
	if bin := os.Getenv("VLLMTOP_DASHBOARD_BIN"); bin != "" {
		return bin // a binary built beforehand, for runs on a machine without the toolchain
	}
	bin := filepath.Join(dir, "vllmtop")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// screen collects what the dashboard draws.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]`)

// text is what was drawn, escapes removed; raw what was written.
func (s *screen) text() string { return ansiRE.ReplaceAllString(s.raw(), "") }
func (s *screen) raw() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// procStat is a process's parent and state from /proc, ok false when it is gone.
func procStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+4 >= len(s) {
		return 0, 0, false
	}
	f := strings.Fields(s[i+2:])
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0][0], true
}

func living(pid int) bool {
	_, st, ok := procStat(pid)
	return ok && st != 'Z' && st != 'X'
}

// descendants adds every living descendant of root to seen.
func descendants(root int, seen map[int]bool) {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, _, ok := procStat(pid); ok {
			parent[pid] = pp
		}
	}
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == root {
				seen[pid] = true
				break
			}
		}
	}
}

// dashRun is one dashboard in a pseudo-terminal.
type dashRun struct {
	cmd    *exec.Cmd
	master *os.File
	scr    *screen
	tree   map[int]bool // every descendant seen
	done   chan error
	eof    chan struct{} // closed when the terminal has nothing more to read
}

func startDashboard(t *testing.T, bin string, args ...string) *dashRun {
	t.Helper()
	master, tty := openPTY(t)
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "VLLMTOP_TEST_AS_VLLMTOP=", "COLORTERM=")
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Start())
	_ = tty.Close()
	d := &dashRun{cmd: cmd, master: master, scr: &screen{}, tree: map[int]bool{}, done: make(chan error, 1), eof: make(chan struct{})}
	go d.read()
	go func() { d.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for pid := range d.tree {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = master.Close()
	})
	return d
}

// read keeps what the dashboard draws and answers its terminal's queries (the background
// colour, the cursor's position) as a terminal does, so that it does not wait for them.
func (d *dashRun) read() {
	defer close(d.eof)
	buf := make([]byte, 64<<10)
	for {
		n, err := d.master.Read(buf)
		if n > 0 {
			b := buf[:n]
			_, _ = d.scr.Write(b)
			if bytes.Contains(b, []byte("\x1b]11;?")) {
				_, _ = d.master.Write([]byte("\x1b]11;rgb:0000/0000/0000\x1b\\"))
			}
			if bytes.Contains(b, []byte("\x1b[6n")) {
				_, _ = d.master.Write([]byte("\x1b[1;1R"))
			}
		}
		if err != nil {
			return
		}
	}
}

// waitFor waits (bounded) until the screen shows want, noting the process tree meanwhile.
func (d *dashRun) waitFor(t *testing.T, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(d.scr.text(), want) {
		descendants(d.cmd.Process.Pid, d.tree)
		select {
		case err := <-d.done:
			t.Fatalf("the dashboard ended (%v) before showing %q:\n%s", err, want, tail(d.scr.text()))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q on the screen within %s:\n%s", want, within, tail(d.scr.text()))
		}
	}
	descendants(d.cmd.Process.Pid, d.tree)
}

func tail(s string) string {
	if len(s) > 3000 {
		return s[len(s)-3000:]
	}
	return s
}

// signalEnds sends sig and requires a clean exit within grace, the terminal restored and no
// survivor among the processes the dashboard started.
func (d *dashRun) signalEnds(t *testing.T, sig syscall.Signal, grace time.Duration) {
	t.Helper()
	descendants(d.cmd.Process.Pid, d.tree)
	before := len(d.scr.raw())
	require.NoError(t, d.cmd.Process.Signal(sig))
	select {
	case err := <-d.done:
		ws := d.cmd.ProcessState.Sys().(syscall.WaitStatus)
		assert.False(t, ws.Signaled(), "ended by %v itself, not by its own handling: %v", sig, err)
	case <-time.After(grace):
		_ = d.cmd.Process.Signal(syscall.SIGQUIT) // a goroutine dump for the log
		select {
		case <-d.done:
		case <-time.After(5 * time.Second):
		}
		t.Fatalf("still running %s after %v:\n%s", grace, sig, tail(d.scr.text()))
	}
	// The last bytes may still be on their way through the terminal.
	restored := func() bool {
		a := d.scr.raw()[before:]
		return strings.Contains(a, "\x1b[?1049l") && strings.Contains(a, "\x1b[?25h")
	}
	for end := time.Now().Add(5 * time.Second); !restored() && time.Now().Before(end); {
		select {
		case <-d.eof:
			end = time.Now()
		case <-time.After(10 * time.Millisecond):
		}
	}
	after := d.scr.raw()[before:]
	assert.Contains(t, after, "\x1b[?1049l", "the alternate screen is left")
	assert.Contains(t, after, "\x1b[?25h", "the cursor is shown again")
	pids := make([]int, 0, len(d.tree))
	for pid := range d.tree {
		pids = append(pids, pid)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for living(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		assert.False(t, living(pid), "process %d of the server tree survived", pid)
	}
}

// fakeServer answers as a vLLM server that is up and idle.
func fakeServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","max_model_len":4096}]}`)
		case "/metrics":
			_, _ = io.WriteString(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 0\n")
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// fakePrometheus has one target up.
func fakePrometheus(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/targets"):
			_, _ = io.WriteString(w, `{"status":"success","data":{"activeTargets":[]}}`)
		case strings.HasSuffix(r.URL.Path, "/query_range"):
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
		default:
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"a:8000","model_name":"m"},"value":[1,"1"]}]}}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// signalRounds is how often each signal is sent in each mode: VLLMTOP_SIGNAL_ROUNDS, else 1
// with -short and 2 without.
func signalRounds(t *testing.T) int {
	if n, err := strconv.Atoi(os.Getenv("VLLMTOP_SIGNAL_ROUNDS")); err == nil && n > 0 {
		return n
	}
	if testing.Short() {
		return 1
	}
	return 2
}

// Every mode ends on SIGTERM, SIGINT and SIGHUP: attached, a fleet from Prometheus, a
// supervised server idle, and the built-in simulator during a W sweep (a restart or a probe
// under way).
func TestDashboardEndsOnEverySignal(t *testing.T) {
	sim := []string{"--sim-startup-seconds", "0.2", "--sim-speed", "20"}
	modes := []struct {
		name  string
		args  func(t *testing.T) []string
		ready string
		then  func(t *testing.T, d *dashRun)
		tree  bool // a server tree is started (the keeper and the server at least)
	}{
		{"attached", func(t *testing.T) []string { return []string{"--attach", fakeServer(t)} }, "ready", nil, false},
		{"fleet", func(t *testing.T) []string { return []string{"--prometheus", fakePrometheus(t)} }, "a:8000", nil, false},
		{"supervised idle", func(t *testing.T) []string {
			return append([]string{"--max-concurrency", "0", "--", "vllmtop", "sim"}, sim...)
		}, "ready", nil, true},
		{"W sweep", func(t *testing.T) []string {
			return append([]string{"--sla", "p99_ttft_ms<=500", "--sweep-utils", "0.80,0.85,0.90", "--probe-requests", "4"}, sim...)
		}, "ready", func(t *testing.T, d *dashRun) {
			_, err := d.master.Write([]byte("W"))
			require.NoError(t, err)
			d.waitFor(t, "W: restart 3 times", 30*time.Second) // W asks first
			_, err = d.master.Write([]byte("y"))
			require.NoError(t, err)
			d.waitFor(t, "restarting", 30*time.Second)
		}, true},
	}
	bin := buildDashboard(t, t.TempDir())
	grace := server.DefaultGrace + 5*time.Second
	for _, m := range modes {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
			t.Run(m.name+" "+sig.String(), func(t *testing.T) {
				for range signalRounds(t) {
					d := startDashboard(t, bin, m.args(t)...)
					d.waitFor(t, m.ready, 60*time.Second)
					if m.then != nil {
						m.then(t, d)
					}
					if m.tree {
						require.GreaterOrEqual(t, len(d.tree), 2, "the keeper and the server run")
					}
					d.signalEnds(t, sig, grace)
					if t.Failed() {
						return
					}
				}
			})
		}
	}
}
