package scrape

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// This file is the metrics report of vllmtop metrics: a Snapshot and a Window as text, and
// what to try when a scrape fails.

// Hint says what to try for the common failures, to follow the error's own text: a missing or
// refused API key (haveKey: the scrape sent one), a wrong path, nothing listening, an unknown
// certificate authority, a slow server. It is "" when there is nothing to add.
func (e *Error) Hint(haveKey bool) string {
	var unknownCA x509.UnknownAuthorityError
	switch {
	case e.StatusCode == 401 || e.StatusCode == 403:
		if haveKey {
			return "; the server refused the API key"
		}
		return "; the server wants an API key (--api-key, or OPENAI_API_KEY or VLLM_API_KEY)"
	case e.StatusCode == 404:
		return "; no metrics at this path (give the server's base URL or its /metrics URL)"
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		return "; is the server running, on this host and port?"
	case errors.As(e.Err, &unknownCA):
		return "; trust its CA with --ca-file, or skip verification with --insecure"
	case e.Timeout():
		return "; the server is slow or stuck (--timeout raises the limit)"
	}
	return ""
}

// ScrapeWindow scrapes twice, d apart (sleep waits; nil is the wall clock), and returns the
// second snapshot and the window between the two: rates and latency quantiles.
func (c *Client) ScrapeWindow(ctx context.Context, d time.Duration, sleep func(context.Context, time.Duration) error) (Snapshot, Window, error) {
	prev, err := c.Scrape(ctx)
	if err != nil {
		return Snapshot{}, Window{}, err
	}
	if sleep == nil {
		sleep = sleepFor
	}
	if err := sleep(ctx, d); err != nil {
		return Snapshot{}, Window{}, fmt.Errorf("interrupted during the %v window", d)
	}
	cur, err := c.Scrape(ctx)
	if err != nil {
		return Snapshot{}, Window{}, err
	}
	return cur, Compare(&prev, &cur), nil
}

// ScrapeWithin makes one scrape, or with window > 0 the two of ScrapeWindow (sleep waits
// between them), within the time timeout gives: each scrape, its parse included, may take that
// long, so the whole ends within the window and one timeout per scrape, however slow the parse
// of a huge body (vllmtop metrics' --timeout).
func (c *Client) ScrapeWithin(ctx context.Context, window, timeout time.Duration, sleep func(context.Context, time.Duration) error) (Snapshot, *Window, error) {
	limit := timeout
	if window > 0 {
		limit = window + 2*timeout
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	type result struct {
		cur Snapshot
		win *Window
		err error
	}
	done := make(chan result, 1) // the work may outlive a deadline; its result is dropped then
	go func() {
		var r result
		if window > 0 {
			var w Window
			r.cur, w, r.err = c.ScrapeWindow(ctx, window, sleep)
			r.win = &w
		} else {
			r.cur, r.err = c.Scrape(ctx)
		}
		done <- r
	}()
	select {
	case r := <-done:
		return r.cur, r.win, r.err
	case <-ctx.Done():
	}
	// A fetch under way ends with the context, and says better what it was waiting for.
	select {
	case r := <-done:
		return r.cur, r.win, r.err
	case <-time.After(100 * time.Millisecond):
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Snapshot{}, nil, fmt.Errorf("%s: no result within %v (--timeout %v for each scrape and its parse)", c.URL(), limit, timeout)
		}
		return Snapshot{}, nil, ctx.Err()
	}
}

func sleepFor(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d): // collected once it fires or is dropped (Go 1.23 timers)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WriteText writes a snapshot, and the window when not nil, as vllmtop metrics prints them:
// label and value rows of at most 80 columns. url names the server in the first line and now
// gives its uptime.
func WriteText(w io.Writer, url string, s *Snapshot, win *Window, now time.Time) {
	t := &table{w: w}
	head := sanitize.URL(url) + "  (" + s.Backend.String()
	if start := s.ProcessStartSeconds; start.OK && start.V > 0 && start.V < 1e11 {
		if up := now.Sub(time.Unix(0, int64(start.V*1e9))); up > 0 {
			head += ", up " + uptime(up)
		}
	}
	t.line(head + ")")

	if s.Backend == BackendUnknown && len(s.Models) == 0 {
		t.row("metrics", fmt.Sprintf("no vLLM, SGLang or TGI metrics; %d families (see --json or --raw)", len(s.Unmapped)))
		t.row("", "(a vLLM started with --disable-log-stats exports no engine metrics)")
		return
	}
	var byName map[string]*ModelWindow
	for i := range s.Models {
		m := &s.Models[i]
		var mw *ModelWindow
		if win != nil {
			mw, byName = modelWindow(win, i, m.Name, byName)
		}
		printModel(t, s, m)
		if win != nil {
			printWindow(t, s, win, m, mw)
		}
	}
	printCapacity(t, s)
	for _, warning := range s.Warnings {
		t.row("warning", warning)
	}
	t.row("unmapped", fmt.Sprintf("%d families (--json lists them)", len(s.Unmapped)))
}

// modelWindow finds the window of the snapshot's model i, named name: at the same position
// (Compare keeps the snapshot's order), else by name through byName, built on the first miss,
// so a report of many models stays linear.
func modelWindow(win *Window, i int, name string, byName map[string]*ModelWindow) (*ModelWindow, map[string]*ModelWindow) {
	if i < len(win.Models) && win.Models[i].Name == name {
		return &win.Models[i], byName
	}
	if byName == nil {
		byName = make(map[string]*ModelWindow, len(win.Models))
		for j := range win.Models {
			byName[win.Models[j].Name] = &win.Models[j]
		}
	}
	return byName[name], byName
}

func printModel(t *table, s *Snapshot, m *Model) {
	name := m.Name
	if name == "" {
		name = "(no model label)"
	}
	t.line("")
	t.row("model", name)
	st := &m.Total
	engines := make([]string, len(m.Engines))
	for i, e := range m.Engines {
		engines[i] = e.Engine
	}
	label := "engine"
	if len(engines) != 1 {
		label = "engines"
	}
	t.row("engines", fmt.Sprintf("%d (%s %s)", len(engines), label, strings.Join(engines, ", ")))

	req := "running " + count(st.Running) + ", waiting " + count(st.Waiting)
	if len(st.WaitingByReason) > 0 {
		req += " (by reason: " + byKey(st.WaitingByReason, []string{"capacity", "deferred"}) + ")"
	}
	if st.Swapped.OK {
		req += ", swapped " + count(st.Swapped)
	}
	if st.Awake.OK && st.Awake.V == 0 {
		req += ", ASLEEP"
	}
	t.row("requests", req)

	kv := percent(st.KVCacheUsage) + " used"
	if len(m.Engines) > 1 && m.KVCacheUsageBasis != "" && m.KVCacheUsageBasis != "engine" {
		kv += " (" + m.KVCacheUsageBasis + " over engines)"
	}
	if s.Capacity.KVCacheTokens.OK && len(s.Models) == 1 {
		kv += " of " + count(s.Capacity.KVCacheTokens) + " tokens"
	}
	t.row("KV cache", kv)
	t.row("preemptions", count(st.Preemptions)+" since start")
	switch {
	case prefixCachingOff(s):
		t.row("prefix cache", "off (enable_prefix_caching=False)")
	case st.PrefixCacheQueries.OK && st.PrefixCacheQueries.V > 0:
		hit := PrefixCacheHitRate(nil, st)
		t.row("prefix cache", fmt.Sprintf("%s hit since start (%s of %s tokens)", percent(hit), count(st.PrefixCacheHits), count(st.PrefixCacheQueries)))
	case st.PrefixCacheQueries.OK:
		t.row("prefix cache", "no lookups yet")
	}
	if st.PromptTokens.OK || st.GenerationTokens.OK {
		t.row("tokens", "prompt "+count(st.PromptTokens)+", generation "+count(st.GenerationTokens)+" since start")
	}
	if st.RequestsFinished.OK {
		fin := count(st.RequestsFinished) + " since start"
		if nz := nonZero(st.FinishedByReason); len(nz) > 0 {
			fin += ": " + byKey(nz, []string{"stop", "length", "abort", "error", "repetition", "success"})
		}
		t.row("finished", fin)
	}
	if st.SpecDecodeDraftTokens.OK && st.SpecDecodeDraftTokens.V > 0 {
		t.row("spec decode", percent(Some(st.SpecDecodeAcceptedTokens.Or(0)/st.SpecDecodeDraftTokens.V))+" of draft tokens accepted since start")
	}
	printMeans(t, st)
	printEngines(t, m)
}

// printMeans writes the mean latencies since the server started.
func printMeans(t *table, st *Stats) {
	var means []string
	seen := false
	for _, l := range latencies(st) {
		seen = seen || l.h != nil
		if mean := l.h.Mean(); mean.OK {
			means = append(means, l.name+" "+seconds(mean))
		}
	}
	switch {
	case len(means) > 0:
		t.wrapped("latency", "mean since start: ", means)
	case seen:
		t.row("latency", "no observations yet")
	}
}

// printEngines writes one row per data-parallel engine when there are several.
func printEngines(t *table, m *Model) {
	if len(m.Engines) > 1 {
		t.line(fmt.Sprintf("  %-8s %9s %9s %8s %12s %12s", "engine", "running", "waiting", "KV", "prompt tok", "gen tok"))
		for _, e := range m.Engines {
			t.line(fmt.Sprintf("  %-8s %9s %9s %8s %12s %12s", clip(e.Engine, 8), count(e.Running), count(e.Waiting),
				percent(e.KVCacheUsage), count(e.PromptTokens), count(e.GenerationTokens)))
		}
		printImbalance(t, m)
	}
}

// prefixCachingOff reports whether every engine's cache config says prefix caching is off.
func prefixCachingOff(s *Snapshot) bool {
	for _, c := range s.Cache {
		if !c.PrefixCaching.OK || c.PrefixCaching.V != 0 {
			return false
		}
	}
	return len(s.Cache) > 0
}

// printWindow writes the rates and quantiles of one model over the window.
func printWindow(t *table, s *Snapshot, win *Window, m *Model, mw *ModelWindow) {
	t.line("")
	title := fmt.Sprintf("over the last %s", textfmt.Fixed(win.ElapsedSeconds, 1)+" s")
	if win.SinceRestart {
		title += ", since the server restarted"
	}
	switch {
	case win.Restarted:
		t.row("window", title+": the server restarted, so no rates")
		return
	case mw == nil:
		t.row("window", title+": this model was not in the first scrape")
		return
	}
	t.row("window", title)
	r := &mw.Total
	t.row("tokens/s", "prompt "+perSec(r.PromptTokensPerSec)+", generation "+perSec(r.GenerationTokensPerSec))
	if r.RequestsPerSec.OK {
		done := perSec(r.RequestsPerSec) + " finished"
		if nz := nonZero(r.FinishedByReason); len(nz) > 0 {
			done += " (" + byKey(nz, []string{"stop", "length", "abort", "error", "repetition", "success"}) + ")"
		}
		t.row("requests/s", done)
	}
	if r.Preemptions.OK {
		t.row("preemptions", count(r.Preemptions)+" in the window")
	}
	if m.Total.PrefixCacheQueries.OK && !prefixCachingOff(s) {
		if hit := r.PrefixCacheHitRate; hit.OK && !math.IsNaN(hit.V) {
			t.row("prefix cache", percent(hit)+" hit")
		} else {
			t.row("prefix cache", "no lookups in the window")
		}
	}
	if r.SpecDecodeAcceptance.OK {
		t.row("spec decode", percent(r.SpecDecodeAcceptance)+" of draft tokens accepted")
	}
	printQuantiles(t, r)
	if len(mw.Engines) > 1 {
		t.line(fmt.Sprintf("  %-8s %14s %14s %12s", "engine", "prompt tok/s", "gen tok/s", "TTFT p99"))
		for _, e := range mw.Engines {
			p99 := Value{}
			if e.TTFTSeconds != nil {
				p99 = e.TTFTSeconds.P99
			}
			t.line(fmt.Sprintf("  %-8s %14s %14s %12s", clip(e.Engine, 8), perSec(e.PromptTokensPerSec), perSec(e.GenerationTokensPerSec), seconds(p99)))
		}
	}
}

// printQuantiles writes the window's latency quantiles, marking those only a bucket bound
// tells.
func printQuantiles(t *table, r *Rates) {
	rows := []struct {
		name string
		d    *Dist
	}{
		{"TTFT", r.TTFTSeconds}, {"ITL", r.ITLSeconds}, {"TPOT", r.TPOTSeconds}, {"E2E", r.E2ESeconds},
		{"queue", r.QueueSeconds}, {"prefill", r.PrefillSeconds}, {"decode", r.DecodeSeconds},
	}
	header := false
	for _, row := range rows {
		if row.d == nil {
			continue
		}
		if !header {
			t.line(fmt.Sprintf("  %-14s %10s %10s %10s %10s %9s", "latency", "p50", "p90", "p99", "mean", "count"))
			header = true
		}
		q := func(name string, v Value) string {
			if slices.Contains(row.d.Saturated, name) {
				return "≥" + seconds(v)
			}
			if slices.Contains(row.d.InFirstBucket, name) {
				// Interpolated from 0 inside the lowest bucket: only the bound is sure.
				return "≤" + seconds(Some(row.d.FirstBound))
			}
			return seconds(v)
		}
		t.line(fmt.Sprintf("  %-14s %10s %10s %10s %10s %9s", row.name, q("p50", row.d.P50), q("p90", row.d.P90),
			q("p99", row.d.P99), seconds(row.d.Mean), count(Some(row.d.Count))))
	}
}

// printCapacity writes the KV cache's size and the configured GPU memory.
func printCapacity(t *table, s *Snapshot) {
	c := &s.Capacity
	var parts []string
	if c.KVCacheTokens.OK {
		parts = append(parts, count(c.KVCacheTokens)+" KV tokens")
	}
	if c.NumGPUBlocks.OK && c.BlockSizeTokens.OK {
		parts = append(parts, count(c.NumGPUBlocks)+" blocks of "+count(c.BlockSizeTokens))
	}
	if c.MaxConcurrency.OK {
		parts = append(parts, "max concurrency "+textfmt.Fixed(c.MaxConcurrency.V, 2)+"x")
	}
	if c.GPUMemoryUtilization.OK {
		parts = append(parts, "GPU memory "+textfmt.Fixed(c.GPUMemoryUtilization.V, -1)+" (configured)")
	}
	if len(parts) == 0 {
		return
	}
	t.line("")
	t.wrapped("capacity", "", parts)
}

type latency struct {
	name string
	h    *Histogram
}

func latencies(st *Stats) []latency {
	return []latency{
		{"TTFT", st.TTFTSeconds}, {"ITL", st.ITLSeconds}, {"TPOT", st.TPOTSeconds}, {"E2E", st.E2ESeconds},
		{"queue", st.QueueSeconds}, {"prefill", st.PrefillSeconds}, {"decode", st.DecodeSeconds},
	}
}

// table writes label/value rows; values longer than a line wrap under the value column.
type table struct{ w io.Writer }

const (
	tableWidth = 80
	labelWidth = 14
)

// line writes s, wrapped at spaces under the value column when it is wider than the table; a
// single word wider than a line (hostile text) is clipped.
func (t *table) line(s string) {
	indent := strings.Repeat(" ", labelWidth+1)
	for runeLen(s) > tableWidth {
		r := []rune(s)
		cut := strings.LastIndex(string(r[:tableWidth+1]), " ")
		if cut <= labelWidth+1 || strings.TrimSpace(s[:cut]) == "" {
			break // no space to break at after the label: clip
		}
		fmt.Fprintln(t.w, strings.TrimRight(s[:cut], " "))
		s = indent + strings.TrimLeft(s[cut:], " ")
	}
	fmt.Fprintln(t.w, clip(s, tableWidth))
}

func (t *table) row(label, value string) {
	t.line(fmt.Sprintf("%-*s %s", labelWidth, label, value))
}

// wrapped writes prefix then the parts joined by ", ", breaking between parts to stay in the
// width.
func (t *table) wrapped(label, prefix string, parts []string) {
	indent := strings.Repeat(" ", labelWidth+1)
	line := fmt.Sprintf("%-*s %s", labelWidth, label, prefix)
	first := true
	for _, p := range parts {
		sep := ", "
		if first {
			sep = ""
		}
		// +1: room for the comma that ends a wrapped line.
		if !first && runeLen(line)+len(sep)+runeLen(p)+1 > tableWidth {
			t.line(line + ",")
			line, sep = indent, ""
		}
		line += sep + p
		first = false
	}
	t.line(line)
}

func runeLen(s string) int { return len([]rune(s)) }

// clip shortens s to n columns, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// count prints a number with thousands separators, keeping up to 2 decimals for fractions.
func count(v Value) string {
	if !v.OK {
		return "--"
	}
	f := v.V
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return v.String()
	}
	if f != math.Trunc(f) || math.Abs(f) >= 1e15 {
		return textfmt.Fixed(f, 2)
	}
	return textfmt.Thousands(int64(f))
}

func percent(v Value) string {
	if !v.OK || math.IsNaN(v.V) {
		return "--"
	}
	return textfmt.Fixed(100*v.V, 1) + " %"
}

func perSec(v Value) string {
	if !v.OK || math.IsNaN(v.V) {
		return "--"
	}
	if v.V >= 100 {
		return count(Some(math.Round(v.V)))
	}
	return textfmt.Fixed(v.V, 2)
}

// seconds prints a duration in seconds with a unit that keeps 3 significant digits.
func seconds(v Value) string {
	if !v.OK || math.IsNaN(v.V) {
		return "--"
	}
	s := v.V
	switch a := math.Abs(s); {
	case math.IsInf(s, 0), a >= 1e9: // past what a Duration holds
		return textfmt.Fixed(s, 0) + " s"
	case a == 0:
		return "0 s"
	case a < 1e-3:
		return sig(s*1e6) + " µs"
	case a < 1:
		return sig(s*1e3) + " ms"
	case a < 1000:
		return sig(s) + " s"
	}
	return (time.Duration(s) * time.Second).String()
}

// sig prints 3 significant digits without an exponent.
func sig(f float64) string {
	switch a := math.Abs(f); {
	case a >= 100:
		return textfmt.Fixed(f, 0)
	case a >= 10:
		return textfmt.Fixed(f, 1)
	}
	return textfmt.Fixed(f, 2)
}

func uptime(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

func nonZero(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// byKey prints "k v, k v" with the known keys first in their order, then the rest sorted.
func byKey(m map[string]float64, order []string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		for i, o := range order {
			if o == k {
				return i
			}
		}
		return len(order)
	}
	sort.Slice(keys, func(i, j int) bool {
		if ri, rj := rank(keys[i]), rank(keys[j]); ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + count(Some(m[k]))
	}
	return strings.Join(parts, ", ")
}
