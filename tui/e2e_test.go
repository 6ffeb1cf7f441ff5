package tui_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/internal/base/testport"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim/capacity"
	"github.com/vllmtop/vllmtop/server/sim/serve"
	"github.com/vllmtop/vllmtop/tui"
)

// buildVllmtop builds the binary once for the end-to-end test: the child it supervises.
func buildVllmtop(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vllmtop")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "github.com/vllmtop/vllmtop")...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// freePort is a port for a server a child process starts.
func freePort(t *testing.T) int { return testport.Free(t) }

// TestDashboardEndToEnd runs the dashboard on a supervised `vllmtop sim`: more load shows in
// the header and in the server's running count, a restart with a lower utilisation changes
// the capacity in the header as the engine predicts, and q leaves no process behind.
func TestDashboardEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a server")
	}
	bin := buildVllmtop(t)
	port := freePort(t)
	args := []string{bin, "sim", "Qwen/Qwen3-0.6B", "--sim-gpu", "H100", "--port", strconv.Itoa(port), "--sim-startup-seconds", "0.2", "--gpu-memory-utilization", "0.92"}
	// A race-built child sleeps a second at exit unless told not to.
	sup, err := server.New(args, server.WithGrace(3*time.Second), server.WithHealthInterval(50*time.Millisecond),
		server.WithEnv(append(os.Environ(), "GORACE=atexit_sleep_ms=0")))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, sup.Start(ctx))
	t.Cleanup(func() { _ = sup.Close() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)

	// Long outputs keep requests in flight, so the running count settles at the concurrency.
	load, err := loadgen.NewSession(loadgen.SessionConfig{Client: loadgen.ClientConfig{BaseURL: url}, Concurrency: 4,
		Short: loadgen.RandomConfig{InputLen: 64, OutputLen: 4000}, Long: loadgen.RandomConfig{InputLen: 1024, OutputLen: 4000}})
	require.NoError(t, err)
	go func() { _ = load.Run(ctx, sup.WaitReady) }()
	scr, err := scrape.NewClient(url)
	require.NoError(t, err)
	plan, err := serve.Prepare(args[2:], func(string) string { return "" })
	require.NoError(t, err)
	predict := plan.CapacityAt
	m := tui.New(tui.Deps{Mode: tui.ModeSimulator, Target: "sim", Supervisor: sup, Load: load,
		Scraper: scr, Capacity: &capacity.Model{At: predict}, ScrapeInterval: 200 * time.Millisecond, InitialUtil: 0.92, InitialConc: 4})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(160, 48))

	wait := func(what string, cond func(string) bool) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return cond(string(b)) },
			teatest.WithDuration(30*time.Second), teatest.WithCheckInterval(50*time.Millisecond))
	}
	contains := func(s string) func(string) bool {
		return func(out string) bool { return bytes.Contains([]byte(out), []byte(s)) }
	}
	tok92, _, _ := predict(0.92)
	wait("ready with the predicted capacity", contains(fmt.Sprintf("KV %s tok", textfmt.Thousands(int64(tok92)))))

	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'+'}})
	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'+'}})
	wait("the header follows the concurrency", contains("C=6"))
	wait("the server's running count follows", func(out string) bool {
		return regexp.MustCompile(`running 6\b`).MatchString(out)
	})

	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'u'}})
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	wait("the confirmation", contains("restart the server with --gpu-memory-utilization 0.91"))
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	tok91, _, _ := predict(0.91)
	require.NotEqual(t, tok92, tok91)
	wait("the new capacity", contains(fmt.Sprintf("KV %s tok", textfmt.Thousands(int64(tok91)))))
	assert.Equal(t, 2, sup.Status().Run, "the child was restarted")
	pid := sup.Status().PID
	require.NotZero(t, pid)
	assert.Contains(t, sup.Status().Args, "0.91")

	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'q'}})
	tm.WaitFinished(t, teatest.WithFinalTimeout(20*time.Second))
	assert.Equal(t, server.Exited, sup.Status().State)
	assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "q leaves no child process")
}
