package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/recorder"
	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

const metricsAbout = `Scrape a server's /metrics once and print what it says: requests running and waiting,
KV-cache use and capacity, preemptions, prefix-cache hits, tokens and latency. With
--window, scrape twice that far apart and add rates and latency quantiles over the window,
and the verdicts on them (rule, what it saw, the flag to change). With --bundle FILE, replay
a flight-recorder bundle's scrapes through the same tables instead of scraping.

URL is the server's base URL (http://host:8000, /metrics is added) or a full /metrics URL.
vLLM is mapped in full; SGLang and TGI where their metrics mean the same; anything else is
listed raw.

Exit status: 0 ok, 1 the server could not be scraped, 2 bad arguments.
`

// waitWindow waits d between the two scrapes of --window; tests replace it.
var waitWindow func(ctx context.Context, d time.Duration) error

type metricsOptions struct {
	window, timeout time.Duration
	json, raw       bool
	apiKey, caFile  string
	insecure        bool
	bundle          string
	// The server's engine limits, which /metrics does not say, for the verdicts.
	maxNumSeqs, maxNumBatchedTokens int
}

// facts are what the verdicts know of the server's limits.
func (o *metricsOptions) facts() diagnose.Facts {
	return diagnose.Facts{MaxNumSeqs: o.maxNumSeqs, MaxNumBatchedTokens: o.maxNumBatchedTokens}
}

// defineMetrics is `vllmtop metrics URL`: one scrape (or two, for rates), parsed and printed.
func defineMetrics(fs *pflag.FlagSet, e *env) runFunc {
	o := &metricsOptions{}
	fs.DurationVar(&o.window, "window", 0, "scrape twice this far apart (e.g. 5s) and show rates and latency quantiles over the window")
	fs.BoolVar(&o.json, "json", false, "print the parsed snapshot (and window) as JSON")
	fs.BoolVar(&o.raw, "raw", false, "print every metric family as prom2json's JSON, unmapped")
	fs.DurationVar(&o.timeout, "timeout", scrape.DefaultTimeout, "limit for each scrape, its parse included (with --window the whole ends within the window and two)")
	fs.StringVar(&o.apiKey, "api-key", "", "Bearer key (default: $OPENAI_API_KEY, else $VLLM_API_KEY)")
	fs.BoolVar(&o.insecure, "insecure", false, "https: do not verify the server's certificate")
	fs.StringVar(&o.caFile, "ca-file", "", "https: trust the PEM certificates in this file")
	fs.IntVar(&o.maxNumSeqs, "max-num-seqs", 0, "the server's --max-num-seqs, for the verdicts (/metrics does not say it)")
	fs.IntVar(&o.maxNumBatchedTokens, "max-num-batched-tokens", 0, "the server's --max-num-batched-tokens, for the verdicts")
	fs.StringVar(&o.bundle, "bundle", "", "replay this flight-recorder bundle (.tar.gz) instead of scraping a URL")
	return func(ctx context.Context, args []string) error {
		switch {
		case o.bundle != "" && len(args) > 0:
			return usagef("--bundle replays a bundle: give no URL with it")
		case o.bundle != "":
			return o.replay(ctx, e)
		case len(args) == 0:
			return usagef("no URL given (e.g. vllmtop metrics http://127.0.0.1:8000)")
		case len(args) > 1:
			return usagef("one URL only, got %d arguments: %s", len(args), strings.Join(args, " "))
		case o.maxNumSeqs < 0 || o.maxNumBatchedTokens < 0:
			return usagef("--max-num-seqs and --max-num-batched-tokens must be positive")
		case o.window < 0:
			return usagef("--window must be positive, got %v", o.window)
		case o.timeout <= 0:
			return usagef("--timeout must be positive, got %v", o.timeout)
		case o.raw && o.json:
			return usagef("--raw and --json are two different outputs; pick one")
		case o.raw && o.window > 0:
			return usagef("--raw prints one scrape; drop --window")
		}
		if o.apiKey == "" {
			o.apiKey = loadgen.APIKeyFromEnv(e.getenv)
		}
		opts := []scrape.Option{scrape.WithTimeout(o.timeout), scrape.WithAPIKey(o.apiKey)}
		if o.insecure {
			opts = append(opts, scrape.WithInsecureSkipVerify())
		}
		if o.caFile != "" {
			opts = append(opts, scrape.WithCAFile(o.caFile))
		}
		client, err := scrape.NewClient(args[0], opts...)
		if err != nil {
			return usagef("%v", err)
		}
		if err := o.print(ctx, client, e); err != nil {
			hint := ""
			var se *scrape.Error
			if errors.As(err, &se) {
				hint = se.Hint(o.apiKey != "")
			}
			return fmt.Errorf("%w%s", err, hint)
		}
		return nil
	}
}

// print scrapes and prints what the options ask for.
func (o *metricsOptions) print(ctx context.Context, client *scrape.Client, e *env) error {
	if o.raw {
		fams, err := client.ScrapeRaw(ctx)
		if err != nil {
			return err
		}
		return writeJSON(e.stdout, fams)
	}
	cur, win, err := client.ScrapeWithin(ctx, o.window, o.timeout, waitWindow)
	if err != nil {
		return err
	}
	switch {
	case o.json && win == nil:
		return writeJSON(e.stdout, cur)
	case o.json:
		verdicts := diagnose.Server(client.URL(), &cur, win, o.facts(), diagnose.DefaultThresholds())
		if verdicts == nil {
			verdicts = []diagnose.Verdict{} // a healthy server: an empty list, not null
		}
		return writeJSON(e.stdout, struct {
			Snapshot scrape.Snapshot    `json:"snapshot"`
			Window   *scrape.Window     `json:"window"`
			Verdicts []diagnose.Verdict `json:"verdicts"`
		}{cur, win, verdicts})
	}
	scrape.WriteText(e.stdout, client.URL(), &cur, win, time.Now())
	if win != nil {
		fmt.Fprintln(e.stdout)
		o.writeVerdicts(e.stdout, client.URL(), &cur, win)
	}
	return nil
}

// writeVerdicts prints the verdicts on a window; on a server that exports no engine metrics
// there is nothing to judge, which is not health.
func (o *metricsOptions) writeVerdicts(w io.Writer, endpoint string, cur *scrape.Snapshot, win *scrape.Window) {
	if cur.Backend == scrape.BackendUnknown && len(cur.Models) == 0 {
		fmt.Fprintln(w, "Verdicts\n  none: no engine metrics to judge (see above)")
		return
	}
	diagnose.WriteText(w, diagnose.Server(endpoint, cur, win, o.facts(), diagnose.DefaultThresholds()))
}

// replay prints each endpoint of a bundle as metrics --window would have: its last scrape,
// the window back to --window before it (default: the bundle's first), and the verdicts.
// The bundle is streamed, and ctx (a signal) stops it.
func (o *metricsOptions) replay(ctx context.Context, e *env) error {
	b, err := recorder.Open(ctx, o.bundle)
	if err != nil {
		return err
	}
	span := o.window
	if span == 0 {
		span = 1 << 62
	}
	ws, err := b.Windows(ctx, span)
	if err != nil {
		return err
	}
	for i, w := range ws {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		switch {
		case w.Err != nil:
			fmt.Fprintf(e.stdout, "%s: %s\n", sanitize.Message(w.Endpoint), sanitize.Message(w.Err.Error()))
			continue
		case !w.OK:
			fmt.Fprintf(e.stdout, "%s: fewer than two scrapes in the bundle, no window\n", sanitize.Message(w.Endpoint))
			continue
		}
		scrape.WriteText(e.stdout, w.Endpoint, &w.Cur, &w.Window, w.Cur.Time)
		fmt.Fprintln(e.stdout)
		o.writeVerdicts(e.stdout, w.Endpoint, &w.Cur, &w.Window)
	}
	if len(b.Verdicts) > 0 {
		fmt.Fprintf(e.stdout, "\nVerdicts the dashboard recorded\n")
		for _, v := range b.Verdicts {
			fmt.Fprintf(e.stdout, "  %s\n", recordedVerdict(v))
		}
	}
	return nil
}

// recordedVerdict is a verdict read from a bundle as one line: its numbers came from a
// file, so each is printed within a bounded width.
func recordedVerdict(v diagnose.Verdict) string {
	s := v.Severity.String() + " " + sanitize.Message(v.Rule) + ": " + sanitize.Message(v.Text)
	ev := make([]string, len(v.Evidence))
	for i, x := range v.Evidence {
		ev[i] = sanitize.Message(x.Name) + " " + evidenceValue(x.Value, sanitize.Message(x.Unit))
		if x.Threshold != "" {
			ev[i] += " (" + sanitize.Message(x.Threshold) + ")"
		}
	}
	if len(ev) > 0 {
		s += " [" + strings.Join(ev, "; ") + "]"
	}
	return textfmt.OneLine(s, maxVerdictLine)
}

// evidenceValue writes a value in its unit, as diagnose does: "%" holds a fraction.
func evidenceValue(v float64, unit string) string {
	switch unit {
	case "%":
		return textfmt.Number(v*100) + "%"
	case "", "s", "/s":
		return textfmt.Number(v) + unit
	}
	return textfmt.Number(v) + " " + unit
}

// maxVerdictLine bounds a recorded verdict's line.
const maxVerdictLine = 2000

// writeJSON prints v indented.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
