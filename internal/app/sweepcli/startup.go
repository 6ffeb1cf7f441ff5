package sweepcli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/vllmtop/vllmtop/internal/app/benchcli"
	"github.com/vllmtop/vllmtop/loadgen"
)

// StartupConfig is `vllmtop sweep startup`, vllm bench sweep startup's flags: the start-up
// time of the simulated server (`vllm bench startup FLAGS` starts `vllmtop sim FLAGS`) for
// each combination of --serve-params and --startup-params.
type StartupConfig struct {
	StartupCmd                 []string
	ServeParams, StartupParams []Combo
	StrictParams               bool
	OutputDir, ExperimentName  string
	NumRuns                    int
	ShowStdout, DryRun, Resume bool
	Clock                      string // benchcli.ClockVirtual: the simulator's imitated start-up, not timed
	ReadyTimeout               time.Duration
	Getenv                     func(string) string
}

// startupOnly are vllm bench startup's own flags; the others are the engine's.
var startupOnly = map[string]int{"--num-iters-cold": 3, "--num-iters-warmup": 1, "--num-iters-warm": 3, "--output-json": 0}

// frontendOnly are vllm serve keys that vllm bench startup (the engine's arguments) lacks:
// --serve-params may hold them, and they are left out as vLLM leaves them out.
var frontendOnly = map[string]bool{"host": true, "port": true, "api_key": true, "uvicorn_log_level": true, "allowed_origins": true,
	"ssl_keyfile": true, "ssl_certfile": true, "root_path": true, "middleware": true, "api_server_count": true, "chat_template": true,
	"enable_auto_tool_choice": true, "tool_call_parser": true, "disable_uvicorn_access_log": true, "response_role": true,
	"enable_log_requests": true, "disable_log_requests": true, "disable_fastapi_docs": true}

// FilterStartupParams drops the keys vllm bench startup does not take, with a line each
// combination, or refuses them when strict.
func FilterStartupParams(combos []Combo, strict bool, say func(string)) ([]Combo, error) {
	out := make([]Combo, len(combos))
	for i, c := range combos {
		kept := Combo{Name: c.Name}
		var dropped []string
		for _, p := range c.Params {
			head, _, _ := strings.Cut(p.Key, ".")
			if frontendOnly[strings.ReplaceAll(head, "-", "_")] {
				dropped = append(dropped, p.Key)
				continue
			}
			kept.Params = append(kept.Params, p)
		}
		if len(dropped) > 0 {
			sort.Strings(dropped)
			msg := "Ignoring unsupported startup params"
			if l := c.Label(); l != "" {
				msg += " for " + l
			}
			msg += ": " + strings.Join(dropped, ", ")
			if strict {
				return nil, errors.New(msg)
			}
			say(msg)
		}
		out[i] = kept
	}
	return out, nil
}

// RunStartup runs the startup sweep and writes its files: NAME/SERVE--...-STARTUP--.../
// run=N.json and summary.json, and NAME/summary.csv.
func RunStartup(ctx context.Context, cfg StartupConfig, env benchcli.Env) error {
	sw := Config{OutputDir: cfg.OutputDir, ExperimentName: cfg.ExperimentName, Resume: cfg.Resume, DryRun: cfg.DryRun}
	dir, err := sw.experimentDir()
	if err != nil {
		return err
	}
	var all []loadgen.ResultDoc
	for _, sc := range cfg.ServeParams {
		for _, uc := range cfg.StartupParams {
			base := startupDir(dir, sc, uc)
			for k := 0; k < cfg.NumRuns; k++ {
				doc, err := cfg.runStartup(ctx, sc, uc, k, loadgen.RunPath(base, k), env)
				if err != nil {
					fmt.Fprintln(env.Stdout, "The script was terminated early. Use `--resume` to continue the script from its last checkpoint.")
					return err
				}
				all = append(all, doc...)
			}
			if !cfg.DryRun {
				if err := loadgen.SaveJSON(filepath.Join(base, "summary.json"), all[len(all)-cfg.NumRuns:]); err != nil {
					return err
				}
			}
		}
	}
	if cfg.DryRun {
		fmt.Fprintf(env.Stdout, "Experiment will be saved at: %s\n", dir)
		return nil
	}
	if _, err := loadgen.SaveSummaryCSV(dir, all); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "Experiment has been saved at: %s\n", dir)
	return nil
}

// startupDir is SERVE--...-STARTUP--... as vLLM names it.
func startupDir(dir string, sc, uc Combo) string {
	var parts []string
	if len(sc.Params) > 0 || sc.Name != "" {
		parts = append(parts, "SERVE-", sc.Label())
	}
	if len(uc.Params) > 0 || uc.Name != "" {
		parts = append(parts, "STARTUP-", uc.Label())
	}
	if len(parts) == 0 {
		return dir
	}
	return filepath.Join(dir, loadgen.SanitizeFilename(strings.Join(parts, "-")))
}
