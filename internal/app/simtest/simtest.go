// Package simtest starts the simulated vLLM in-process, through launch as vllmtop starts it,
// for tests of the packages that watch servers, and finds the external programs (Prometheus)
// those tests run: installed by .ci/run in CI, where their absence fails the test, skipped
// with a reason elsewhere.
package simtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/launch"
	"github.com/vllmtop/vllmtop/internal/base/promtool"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server/sim"
)

// Instance is one simulated server on a loopback port.
type Instance struct {
	URL  string // http://127.0.0.1:PORT
	Addr string // 127.0.0.1:PORT
	args []string
	stop func()
}

// Start serves the simulator with vllm serve's args on a free loopback port, on the wall
// clock (sped up with --sim-speed), until Stop or the end of the test.
func Start(t testing.TB, args ...string) *Instance {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	in := &Instance{Addr: ln.Addr().String(), args: args}
	in.URL = "http://" + in.Addr
	in.serve(t, ln)
	return in
}

// stopGrace is how long a test's in-flight requests run on when its server stops.
const stopGrace = 100 * time.Millisecond

func (in *Instance) serve(t testing.TB, ln net.Listener) {
	t.Helper()
	args := append(append([]string(nil), in.args...), "--sim-startup-seconds", "0")
	srv, err := launch.Launch(launch.Spec{Command: launch.Sim(args...), Mode: launch.InProcess, Listener: ln, Grace: stopGrace})
	require.NoError(t, err)
	in.stop = srv.Stop
	t.Cleanup(in.Stop)
	require.Eventually(t, srv.Instance.Ready, 10*time.Second, time.Millisecond, "simulator ready")
}

// Stop shuts the server down (its port refuses connections from then on). It may be called
// twice.
func (in *Instance) Stop() {
	if in.stop != nil {
		in.stop()
		in.stop = nil
	}
}

// Restart stops the server and starts a fresh one (counters at zero) on the same address.
func (in *Instance) Restart(t testing.TB) {
	t.Helper()
	in.Stop()
	var ln net.Listener
	require.Eventually(t, func() bool {
		var err error
		ln, err = net.Listen("tcp", in.Addr)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the port is free again")
	in.serve(t, ln)
}

// StartVirtual serves the simulator on a loopback port on a virtual clock: engine steps run
// back to back, so a test's load takes milliseconds of simulated time per step of CPU.
func StartVirtual(t testing.TB, args ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	args = append(append([]string(nil), args...), "--sim-startup-seconds", "0")
	srv, err := launch.Launch(launch.Spec{Command: launch.Sim(args...), Mode: launch.InProcess, Listener: ln,
		Clock: sim.NewVirtualClock(time.Now()), Grace: stopGrace})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	require.Eventually(t, srv.Instance.Ready, 10*time.Second, time.Millisecond, "simulator ready")
	return srv.Instance.URL()
}

// Need returns the path of command name, or ends the test: a failure under CI
// (VLLMTOP_CI set), a skip otherwise.
func Need(t testing.TB, name string) string {
	t.Helper()
	return promtool.Need(t, name)
}

// Prometheus runs Debian's prometheus on a free loopback port, scraping targets as job
// "vllm" every interval, with its data in a temporary directory, until the test ends. It
// returns the base URL and a function that stops it early.
func Prometheus(t testing.TB, interval time.Duration, targets ...string) (string, func()) {
	t.Helper()
	bin := Need(t, "prometheus")
	dir := t.TempDir()
	list := ""
	for i, tg := range targets {
		if i > 0 {
			list += ", "
		}
		list += "'" + tg + "'"
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\nscrape_configs:\n  - job_name: vllm\n    static_configs:\n      - targets: [%s]\n",
		interval, interval, interval, list)
	cfgPath := dir + "/prometheus.yml"
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+cfgPath, "--storage.tsdb.path="+dir+"/data",
		"--web.listen-address="+addr, "--log.level=warn")
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	url := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "prometheus ready")
	return url, stop
}

// Load drives a closed loop of conc requests of in prompt and out output tokens at url
// (the server's own output lengths: ignore_eos) until the test ends.
func Load(t testing.TB, url string, conc, in, out int) {
	t.Helper()
	c, err := loadgen.NewClient(loadgen.ClientConfig{BaseURL: url, RequestTimeout: 30 * time.Second})
	require.NoError(t, err)
	w, err := loadgen.NewRandom(loadgen.RandomConfig{InputLen: in, OutputLen: out, IgnoreEOS: true, Seed: 7}, loadgen.EstimatedVocab())
	require.NoError(t, err)
	r := loadgen.NewRunner(c, loadgen.RunnerConfig{Workload: w, Concurrency: conc})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}
