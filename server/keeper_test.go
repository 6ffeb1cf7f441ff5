//go:build linux

package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// childRoleEnv is the role playVLLMTop gives the child it supervises.
const childRoleEnv = "VLLMTOP_SERVER_TEST_CHILD_ROLE"

// playVLLMTop is a "vllmtop": it supervises the command in roleArgsEnv (through a keeper, as
// vllmtop does once main called MaybeRunKeeper), reports the pids of the child and of the
// grandchild the child logs, and waits. With handleHUP it stops the server on SIGHUP, SIGTERM
// or SIGINT as vllmtop does and exits 0; without, SIGHUP kills it outright, as it kills any
// program that does not handle it.
func playVLLMTop(handleHUP bool) int {
	args := strings.Split(os.Getenv(roleArgsEnv), "\x1f")
	s, err := New(args, WithEnv(childEnv(roleEnv+"="+os.Getenv(childRoleEnv))), WithGrace(300*time.Millisecond), WithHealthInterval(time.Hour))
	if err != nil {
		fmt.Println(err)
		return 2
	}
	var stop context.Context = context.Background()
	if handleHUP {
		var cancel context.CancelFunc
		stop, cancel = signal.NotifyContext(stop, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
		defer cancel()
	}
	if err := s.Start(context.Background()); err != nil {
		fmt.Println(err)
		return 2
	}
	fmt.Printf("child pid=%d\n", s.Status().PID)
	go func() {
		for ev := range s.Events() {
			if b, ok := ev.(LogBatch); ok {
				for _, l := range b.Lines {
					if strings.HasPrefix(l.Text, "grandchild pid=") {
						fmt.Println(l.Text)
					}
				}
			}
		}
	}()
	<-stop.Done()
	if err := s.Close(); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("stopped")
	return 0
}

// startVLLMTop runs playVLLMTop over the child role and returns it with the pids of the child
// and the grandchild.
func startVLLMTop(t *testing.T, role, childRole string) (*exec.Cmd, int, int, <-chan string) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	child := []string{self, "--port", freePort(t)}
	cmd := exec.Command(self)
	cmd.Env = childEnv(roleEnv+"="+role, roleArgsEnv+"="+strings.Join(child, "\x1f"))
	cmd.Env = append(cmd.Env, childRoleEnv+"="+childRole)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	var pid, gpid int
	deadline := time.After(20 * time.Second)
	for pid == 0 || gpid == 0 {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the supervising process ended early")
			if p, found := strings.CutPrefix(l, "child pid="); found {
				pid, err = strconv.Atoi(p)
				require.NoError(t, err)
			}
			if p, found := strings.CutPrefix(l, "grandchild pid="); found {
				gpid, err = strconv.Atoi(p)
				require.NoError(t, err)
			}
		case <-deadline:
			t.Fatal("no child and grandchild reported")
		}
	}
	require.True(t, alive(pid))
	require.True(t, alive(gpid))
	return cmd, pid, gpid, lines
}

// requireNoSurvivor waits (bounded, polling /proc) until none of pids is alive.
func requireNoSurvivor(t *testing.T, pids ...int) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, p := range pids {
			if alive(p) {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "survivors among %v", pids)
}

// The review's case: vLLM's API server forks its engine core; vllmtop dies, by SIGKILL or
// because its terminal closed (SIGHUP), and nothing of the server may survive it.
func TestNoSurvivorWhenVLLMTopDies(t *testing.T) {
	for _, tc := range []struct {
		name, role, childRole string
		sig                   syscall.Signal
	}{
		{"SIGKILL", "vllmtop", "fork", syscall.SIGKILL},
		{"SIGHUP without a handler", "vllmtop-nohup", "fork", syscall.SIGHUP},
		{"SIGKILL, the grandchild left the group", "vllmtop", "fork-setsid", syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd, pid, gpid, _ := startVLLMTop(t, tc.role, tc.childRole)
			require.NoError(t, cmd.Process.Signal(tc.sig))
			err := cmd.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			ws := ee.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled())
			assert.Equal(t, tc.sig, ws.Signal(), "it died without stopping anything itself")
			requireNoSurvivor(t, pid, gpid)
		})
	}
}

// SIGHUP is handled like SIGTERM: a graceful stop, the child's group and its grandchild gone.
func TestSIGHUPStopsTheServer(t *testing.T) {
	t.Parallel()
	cmd, pid, gpid, lines := startVLLMTop(t, "vllmtop", "fork")
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	var said []string
	for l := range lines {
		said = append(said, l)
	}
	require.NoError(t, cmd.Wait(), "a clean exit: %v", said)
	assert.Contains(t, said, "stopped")
	requireNoSurvivor(t, pid, gpid)
}

// A grandchild that left the group (setsid) is out of the supervisor's reach, not of the
// keeper's: a normal Stop ends it too.
func TestStopLeavesNoEscapedGrandchild(t *testing.T) {
	t.Parallel()
	args, env := helperArgs(t, "fork-setsid")
	s, rec := supervise(t, args, env, WithGrace(300*time.Millisecond), WithWaitDelay(time.Second))
	ctx := testContext(t)
	require.NoError(t, s.Start(ctx))
	line := rec.waitLine(t, "grandchild pid=", 10*time.Second)
	gpid, err := strconv.Atoi(strings.TrimPrefix(line.Text, "grandchild pid="))
	require.NoError(t, err)
	pid := s.Status().PID
	require.NotContains(t, groupMembers(pid), gpid, "it left the group")

	require.NoError(t, s.Stop(ctx))
	exit := s.Status().Exit
	assert.Equal(t, 0, exit.Code, "the child exits on SIGTERM; its status is relayed")
	assert.False(t, alive(gpid), "Stop returns only when the whole tree is gone")
	requireGone(t, pid)
}

// The keeper relays the child's exit faithfully: a code, or death by a signal.
func TestKeeperRelaysTheExit(t *testing.T) {
	t.Parallel()
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		role   string   // a helper role, or
		args   []string // a command
		stop   string   // Stop once this line is logged ("" : at once, when stop is set)
		doStop bool
		code   int
		signal syscall.Signal
	}{
		{name: "exit 3", role: "orphan", code: 3},
		{name: "killed after the grace period", role: "ignore-term", stop: "ignoring SIGTERM", doStop: true, code: -1, signal: syscall.SIGKILL},
		{name: "killed by SIGTERM", args: []string{sleep, "100"}, doStop: true, code: -1, signal: syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, env := tc.args, WithEnv(childEnv())
			if tc.role != "" {
				args, env = helperArgs(t, tc.role)
			}
			s, rec := supervise(t, args, env, WithGrace(200*time.Millisecond), WithWaitDelay(200*time.Millisecond))
			require.NoError(t, s.Start(testContext(t)))
			ppid, running := parentOf(s.Status().PID)
			if running { // "exit 3" may be over already
				assert.NotEqual(t, os.Getpid(), ppid, "the child's parent is the keeper")
			}
			if tc.stop != "" {
				rec.waitLine(t, tc.stop, 10*time.Second)
			}
			if tc.doStop {
				require.NoError(t, s.Stop(testContext(t)))
			}
			exit := rec.waitState(t, Exited, 10*time.Second).Exit
			assert.Equal(t, tc.code, exit.Code)
			assert.Equal(t, tc.signal, exit.Signal)
			assert.NoError(t, exit.Err)
			if running {
				assert.False(t, alive(ppid), "the keeper is gone with its child")
			}
		})
	}
}

// parentOf returns the parent of pid, if pid is still there.
func parentOf(pid int) (int, bool) {
	_, ppid, _, ok := procStatFull(strconv.Itoa(pid))
	return ppid, ok
}

// Without a keeper (a program that did not call MaybeRunKeeper), the child is started
// directly, as before, and the usual stop path holds.
func TestWithoutKeeperStopLeavesNoGrandchild(t *testing.T) {
	t.Parallel()
	args, env := helperArgs(t, "fork")
	s, rec := supervise(t, args, env, WithGrace(300*time.Millisecond), WithWaitDelay(time.Second), withoutKeeper())
	ctx := testContext(t)
	require.NoError(t, s.Start(ctx))
	line := rec.waitLine(t, "grandchild pid=", 10*time.Second)
	gpid, err := strconv.Atoi(strings.TrimPrefix(line.Text, "grandchild pid="))
	require.NoError(t, err)
	pid := s.Status().PID
	ppid, _ := parentOf(pid)
	assert.Equal(t, os.Getpid(), ppid, "started directly")
	require.NoError(t, s.Stop(ctx))
	assert.Equal(t, 0, s.Status().Exit.Code)
	assert.True(t, s.Status().Exit.Killed)
	requireGone(t, pid)
	requireGone(t, gpid)
}
