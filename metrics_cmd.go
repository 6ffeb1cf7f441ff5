package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
)

const metricsUsage = `Usage: vllmtop metrics URL [flags]

Scrape a server's /metrics once and print what it says: requests running and waiting,
KV-cache use and capacity, preemptions, prefix-cache hits, tokens and latency. With
--window, scrape twice that far apart and add rates and latency quantiles over the window.

URL is the server's base URL (http://host:8000, /metrics is added) or a full /metrics URL.
vLLM is mapped in full; SGLang and TGI where their metrics mean the same; anything else is
listed raw.

Flags:
`

// waitWindow waits d between the two scrapes of --window; tests replace it.
var waitWindow = func(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runMetrics scrapes a server's /metrics once (or twice, for rates) and prints the snapshot.
// Exit codes: 0 ok, 1 the server could not be scraped, 2 bad arguments.
func runMetrics(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("vllmtop metrics", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	window := fs.Duration("window", 0, "scrape twice this far apart (e.g. 5s) and show rates and latency quantiles over the window")
	asJSON := fs.Bool("json", false, "print the parsed snapshot (and window) as JSON")
	raw := fs.Bool("raw", false, "print every metric family as prom2json's JSON, unmapped")
	timeout := fs.Duration("timeout", scrape.DefaultTimeout, "limit for each scrape")
	apiKey := fs.String("api-key", "", "Bearer key (default: $OPENAI_API_KEY, else $VLLM_API_KEY)")
	insecure := fs.Bool("insecure", false, "https: do not verify the server's certificate")
	caFile := fs.String("ca-file", "", "https: trust the PEM certificates in this file")

	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "vllmtop metrics: "+format+"\n", a...)
		fmt.Fprintln(stderr, "Run 'vllmtop metrics --help' for usage.")
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, metricsUsage+fs.FlagUsages())
			return 0
		}
		return bad("%v", err)
	}
	switch {
	case fs.NArg() == 0:
		return bad("no URL given (e.g. vllmtop metrics http://127.0.0.1:8000)")
	case fs.NArg() > 1:
		return bad("one URL only, got %d arguments: %s", fs.NArg(), strings.Join(fs.Args(), " "))
	case *window < 0:
		return bad("--window must be positive, got %v", *window)
	case *timeout <= 0:
		return bad("--timeout must be positive, got %v", *timeout)
	case *raw && *asJSON:
		return bad("--raw and --json are two different outputs; pick one")
	case *raw && *window > 0:
		return bad("--raw prints one scrape; drop --window")
	}

	key := *apiKey
	if !fs.Changed("api-key") {
		key = loadgen.APIKeyFromEnv(os.Getenv)
	}
	opts := []scrape.Option{scrape.WithTimeout(*timeout), scrape.WithAPIKey(key)}
	if *insecure {
		opts = append(opts, scrape.WithInsecureSkipVerify())
	}
	if *caFile != "" {
		opts = append(opts, scrape.WithCAFile(*caFile))
	}
	client, err := scrape.NewClient(fs.Arg(0), opts...)
	if err != nil {
		return bad("%v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed := func(err error) int {
		hint := ""
		var se *scrape.Error
		if errors.As(err, &se) {
			hint = se.Hint(key != "")
		}
		fmt.Fprintf(stderr, "vllmtop metrics: %v%s\n", err, hint)
		return 1
	}

	if *raw {
		body, _, err := client.Fetch(ctx)
		if err != nil {
			return failed(err)
		}
		fams, err := scrape.RawFamilies(bytes.NewReader(body))
		if err != nil {
			return failed(&scrape.Error{URL: client.URL(), Err: err})
		}
		return writeJSON(stdout, stderr, fams)
	}

	cur, err := client.Scrape(ctx)
	if err != nil {
		return failed(err)
	}
	var win *scrape.Window
	if *window > 0 {
		prev := cur
		if err := waitWindow(ctx, *window); err != nil {
			return failed(fmt.Errorf("interrupted during the %v window", *window))
		}
		if cur, err = client.Scrape(ctx); err != nil {
			return failed(err)
		}
		w := scrape.Compare(&prev, &cur)
		win = &w
	}

	if *asJSON {
		if win == nil {
			return writeJSON(stdout, stderr, cur)
		}
		return writeJSON(stdout, stderr, struct {
			Snapshot scrape.Snapshot `json:"snapshot"`
			Window   *scrape.Window  `json:"window"`
		}{cur, win})
	}
	scrape.WriteText(stdout, client.URL(), &cur, win, time.Now())
	return 0
}

func writeJSON(stdout, stderr io.Writer, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "vllmtop metrics: encoding JSON: %v\n", err)
		return 1
	}
	_, _ = stdout.Write(append(b, '\n'))
	return 0
}
