package sweepcli

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vllmtop/vllmtop/internal/app/benchcli"
	"github.com/vllmtop/vllmtop/internal/app/launch"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server"
)

// startupPercentages are vllm bench startup's percentiles.
var startupPercentages = []int{10, 25, 50, 75, 90, 99}

// runStartup makes (or reads back) run k of one combination.
func (cfg *StartupConfig) runStartup(ctx context.Context, sc, uc Combo, k int, path string, env benchcli.Env) ([]loadgen.ResultDoc, error) {
	cmd := uc.ApplyTo(sc.ApplyTo(cfg.StartupCmd))
	cmd = append(stripFlag(cmd, "--output-json"), "--output-json", path)
	fmt.Fprintf(env.Stdout, "[BEGIN BENCHMARK]\nServe overrides: %s\nStartup overrides: %s\nRun Number: %d\nBenchmark command: %s\nOutput file: %s\n",
		orNone(sc.Text(", ")), orNone(uc.Text(", ")), k, strings.Join(server.RedactKeys(cmd), " "), path)
	if saved, err := readDoc(path); err == nil {
		fmt.Fprintln(env.Stdout, "Found existing results.\n[SKIPPED BENCHMARK]")
		return []loadgen.ResultDoc{saved}, nil
	}
	if cfg.DryRun {
		fmt.Fprintln(env.Stdout, "[END BENCHMARK]")
		return nil, nil
	}
	simArgs, iters, err := StartupArgs(cmd)
	if err != nil {
		return nil, err
	}
	var phases [2][]float64
	for i, n := range []int{iters[0], iters[1], iters[2]} {
		for j := 0; j < n; j++ {
			secs, err := cfg.startOnce(ctx, simArgs)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				phases[0] = append(phases[0], secs)
			} else if i == 2 {
				phases[1] = append(phases[1], secs)
			}
		}
	}
	doc := startupDoc(phases[0], phases[1]).Set("run_number", k)
	for _, f := range append(sc.Fields(), uc.Fields()...) {
		doc = doc.Set(f.Key, f.Value)
	}
	if cfg.ShowStdout {
		fmt.Fprintf(env.Stdout, "Avg cold startup time: %.2f seconds\nAvg warm startup time: %.2f seconds\n", mean(phases[0]), mean(phases[1]))
	}
	fmt.Fprintln(env.Stdout, "[END BENCHMARK]")
	return []loadgen.ResultDoc{doc}, loadgen.SaveJSON(path, doc)
}

// StartupArgs reads a startup command: `vllm bench startup FLAGS` (or `vllmtop sim FLAGS`, or
// the flags alone) gives the simulator's flags and the cold, warm-up and warm iterations.
func StartupArgs(cmd []string) ([]string, [3]int, error) {
	iters := [3]int{startupOnly["--num-iters-cold"], startupOnly["--num-iters-warmup"], startupOnly["--num-iters-warm"]}
	args := cmd
	switch prog := filepath.Base(cmd[0]); {
	case prog == "vllm" && len(cmd) >= 3 && cmd[1] == "bench" && cmd[2] == "startup":
		args = cmd[3:]
	case prog == "vllmtop" && len(cmd) >= 2 && cmd[1] == "sim":
		args = cmd[2:]
	case !strings.HasPrefix(cmd[0], "-"):
		return nil, iters, fmt.Errorf("--startup-cmd %q: want vllm bench startup FLAGS (vllmtop sim runs them)", strings.Join(cmd, " "))
	}
	var rest []string
	for i := 0; i < len(args); i++ {
		name, val, eq := strings.Cut(args[i], "=")
		name = "--" + strings.ReplaceAll(strings.TrimPrefix(name, "--"), "_", "-")
		if _, own := startupOnly[name]; !own || !strings.HasPrefix(args[i], "--") {
			rest = append(rest, args[i])
			continue
		}
		if !eq && i+1 < len(args) {
			i++
			val = args[i]
		}
		idx := map[string]int{"--num-iters-cold": 0, "--num-iters-warmup": 1, "--num-iters-warm": 2}
		if j, ok := idx[name]; ok {
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return nil, iters, fmt.Errorf("%s %q: want a whole number", name, val)
			}
			iters[j] = n
		}
	}
	if iters[0] < 1 || iters[2] < 1 {
		return nil, iters, fmt.Errorf("--num-iters-cold and --num-iters-warm should be at least 1")
	}
	return rest, iters, nil
}

// startOnce starts the simulated server once and returns its start-up in seconds: on the
// virtual clock the start-up it imitates, else the time until /health answered.
func (cfg *StartupConfig) startOnce(ctx context.Context, simArgs []string) (float64, error) {
	spec := launch.Spec{Command: launch.Sim(simArgs...), Getenv: cfg.Getenv}
	if cfg.Clock == benchcli.ClockVirtual {
		spec.Mode = launch.Virtual
	}
	srv, err := launch.Launch(spec)
	if err != nil {
		return 0, fmt.Errorf("the simulated server would not start: %v", err)
	}
	if spec.Mode == launch.Virtual {
		return srv.Plan.StartupTime().Seconds() * srv.Plan.Speed(), nil
	}
	start := time.Now()
	if err := srv.StartReady(ctx, cfg.ReadyTimeout, "the simulated server"); err != nil {
		return 0, err
	}
	secs := time.Since(start).Seconds()
	srv.Stop()
	return secs, nil
}

// startupDoc is vllm bench startup's --output-json: for cold and warm, the mean, the times
// and their percentiles of the start-up and of compilation (none in the simulator).
func startupDoc(cold, warm []float64) loadgen.ResultDoc {
	var doc loadgen.ResultDoc
	for _, ph := range []struct {
		name  string
		times []float64
	}{{"cold", cold}, {"warm", warm}} {
		for _, m := range []struct {
			suffix string
			times  []float64
		}{{"startup", ph.times}, {"compilation", make([]float64, len(ph.times))}} {
			key := ph.name + "_" + m.suffix
			vals := make([]loadgen.PyFloat, len(m.times))
			for i, v := range m.times {
				vals[i] = loadgen.PyFloat(v)
			}
			var pct loadgen.ResultDoc
			for _, p := range startupPercentages {
				pct = append(pct, loadgen.Field{Key: strconv.Itoa(p), Value: loadgen.PyFloat(percentile(m.times, float64(p)))})
			}
			doc = append(doc, loadgen.Field{Key: "avg_" + key + "_time", Value: loadgen.PyFloat(mean(m.times))},
				loadgen.Field{Key: key + "_times", Value: vals}, loadgen.Field{Key: key + "_percentiles", Value: pct})
		}
	}
	return doc
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / math.Max(1, float64(len(xs)))
}

// percentile is numpy's default (linear between the closest ranks).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (s[lo+1]-s[lo])*(pos-float64(lo))
}

// stripFlag removes a flag and its value (or its =value form) from cmd.
func stripFlag(cmd []string, flag string) []string {
	alt := strings.ReplaceAll(flag, "-", "_")
	alt = "--" + strings.TrimPrefix(alt, "__")
	var out []string
	for i := 0; i < len(cmd); i++ {
		a := cmd[i]
		if a == flag || a == alt {
			i++
			continue
		}
		if strings.HasPrefix(a, flag+"=") || strings.HasPrefix(a, alt+"=") {
			continue
		}
		out = append(out, a)
	}
	return out
}
