package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/vllmtop/vllmtop/server/sim/capacity"
)

// renderFit draws the workload's part of the Capacity view in width columns.
func renderFit(st *Styles, r capacity.Report, width int) []string {
	w := r.Workload
	if w.Tokens() == 0 {
		return nil
	}
	src := ""
	if r.Fit.Source == capacity.SimulatorModel {
		src = "; " + r.Fit.Source.String()
	}
	out := []string{st.Title.Render("this workload") + st.Muted.Render(fmt.Sprintf("  (a request of %d prompt + %d output tokens%s)", w.PromptTokens, w.OutputTokens, src))}
	limits := func(fit capacity.Fit, est bool) string {
		if fit.Limiter == capacity.LimitLength && fit.Concurrency == 0 {
			return st.Bad.Render("a request is longer than --max-model-len: vLLM answers it with HTTP 400")
		}
		parts := []string{
			st.Value.Render(commas(fit.TokensPerRequest)) + st.Label.Render(fmt.Sprintf(" tok (%d blocks) a request", fit.BlocksPerRequest)),
			st.Value.Render(commas(fit.ByKV)) + st.Label.Render(" fit in KV"),
			st.Label.Render("max running ") + st.Value.Render(commas(fit.Concurrency)),
			st.Label.Render("limits first: ") + st.Warn.Render(fit.Limiter),
		}
		if est {
			parts = append(parts, st.Muted.Render("estimate (scaled from vllm:cache_config_info; --max-num-seqs not known)"))
		}
		return strings.Join(wrapItems(parts, st.Muted.Render(" · "), width, 3), "\n")
	}
	switch {
	case len(r.Columns) > 0:
		col := r.Columns[0]
		if col.Refused != "" {
			out = append(out, refusalLines(st, "as given, vLLM would refuse to start: "+col.Refused, width)...)
		} else {
			out = append(out, limits(r.Fit.V, false))
		}
		out = append(out, memoryBar(st, col.Memory, width)...)
		out = append(out, whatIfColumns(st, r.Columns, width)...)
		for _, note := range r.Notes {
			// What the plan says beside its table (a cache dtype the checkpoint chose, a model
			// sized from a file, a cold compile), two lines at most each.
			for _, l := range twoLines(note, width) {
				out = append(out, st.Muted.Render(l))
			}
		}
	case r.Fit.Known():
		out = append(out, limits(r.Fit.V, true))
	default:
		why := "waiting for the KV cache's block size (vllm:cache_config_info)"
		if r.PlanErr != "" {
			why = "the capacity model: " + clean(r.PlanErr)
		}
		out = append(out, st.Muted.Render(truncate(why, width)))
	}
	return out
}

// memoryBar is the GPU's memory plan as a bar with its legend in GiB: W weights, A activation
// peak, N non-torch, G CUDA graphs, K the KV cache, . the rest. Each part has its series colour;
// without colour the letters tell them apart.
func memoryBar(st *Styles, m capacity.Memory, width int) []string {
	barW := max(width-2, 10)
	bar := capacity.Bar(m, barW)
	if bar == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString(st.Muted.Render("["))
	for i := 0; i < len(bar); {
		j := i
		for j < len(bar) && bar[j] == bar[i] {
			j++
		}
		part := bar[i:j]
		if idx := strings.IndexByte("WANGK", bar[i]); idx >= 0 {
			b.WriteString(st.series(idx).Style.Render(part))
		} else {
			b.WriteString(st.Muted.Render(part))
		}
		i = j
	}
	b.WriteString(st.Muted.Render("]"))
	graphs := fmt.Sprintf("G graphs %.2f", m.CUDAGraphGiB)
	if m.GraphsOutsideGiB > 0 { // captured after the KV cache, out of the free memory
		graphs = fmt.Sprintf("G graphs %.2f above the budget", m.GraphsOutsideGiB)
	}
	activations := fmt.Sprintf("A activations %.2f", m.ActivationGiB)
	if m.ColdCompile { // a first boot's compile peak, which a restart does not charge
		activations += " (cold compile)"
	}
	legend := []string{
		fmt.Sprintf("memory %.2f GiB of %.2f", m.RequestedGiB, m.TotalGiB),
		fmt.Sprintf("W weights %.2f", m.WeightsGiB), activations,
		fmt.Sprintf("N non-torch %.2f", m.NonTorchGiB), graphs,
		fmt.Sprintf("K KV %.2f", m.KVGiB), fmt.Sprintf(". free %.2f GiB", math.Max(0, m.TotalGiB-m.RequestedGiB-m.GraphsOutsideGiB)),
	}
	for i := range legend {
		legend[i] = st.Label.Render(legend[i])
	}
	return append([]string{b.String()}, wrapItems(legend, st.Muted.Render(" · "), width, 2)...)
}

// whatIfColumns is the as-given setting beside the what-ifs (fp8 KV, quantised weights, a
// shorter --max-model-len), as many as fit the width, each marked where vLLM refuses it.
func whatIfColumns(st *Styles, cols []capacity.Column, width int) []string {
	short := map[string]string{capacity.LimitKV: "KV blocks", capacity.LimitSeqs: "max-num-seqs", capacity.LimitBatched: "batched-tok", capacity.LimitLength: "model-len"}
	labels := []string{"what-if", "KV tokens", "fit in KV", "max running", "limits first"}
	labelW := 13
	cells := make([][]string, 0, len(cols))
	for _, c := range cols {
		cell := []string{c.Name, commas(c.KVTokens), commas(c.Fit.ByKV), commas(c.Fit.Concurrency), short[c.Fit.Limiter]}
		if c.Refused != "" {
			cell = []string{c.Name, "-", "-", "-", "REFUSED"}
		}
		cells = append(cells, cell)
	}
	used, shown := labelW, 0
	for _, cell := range cells {
		w := maxLen(cell) + 2
		if used+w > width {
			break
		}
		used += w
		shown++
	}
	out := make([]string, len(labels))
	for r, l := range labels {
		line := st.Label.Render(padRight(l, labelW))
		for i := 0; i < shown; i++ {
			v := padLeft(cells[i][r], maxLen(cells[i])+2)
			switch {
			case r == 0:
				v = st.Title.Render(v)
			case cols[i].Refused != "":
				v = st.Bad.Render(v)
			case i == 0:
				v = st.Good.Render(v)
			default:
				v = st.Value.Render(v)
			}
			line += v
		}
		out[r] = line
	}
	if shown < len(cells) {
		out[0] += st.Muted.Render(fmt.Sprintf("  +%d wider", len(cells)-shown))
	}
	for i, c := range cols[:shown] {
		if c.Refused != "" {
			out = append(out, refusalLines(st, fmt.Sprintf("REFUSED %s: %s", cols[i].Name, c.Refused), width)...)
		}
	}
	return out
}

// refusalLines is vLLM's refusal on at most two lines of width: its advice (the dtype to re-run
// with, the length that fits) often comes last.
func refusalLines(st *Styles, s string, width int) []string {
	lines := twoLines(s, width)
	for i := range lines {
		lines[i] = st.Bad.Render(lines[i])
	}
	return lines
}

// twoLines wraps plain text s to width, the second line cut where it needs more.
func twoLines(s string, width int) []string {
	lines := wrapWords(clean(s), width)
	if len(lines) > 2 {
		lines = append(lines[:1], truncate(strings.Join(lines[1:], " "), width))
	}
	return lines
}

func maxLen(xs []string) int {
	n := 0
	for _, x := range xs {
		n = max(n, len(x))
	}
	return n
}
