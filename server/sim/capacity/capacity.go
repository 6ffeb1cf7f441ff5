// Package capacity ties a server's KV cache to a workload: how many requests of a given
// prompt and output length fit at once, and what limits concurrency first (the KV blocks,
// --max-num-seqs, or --max-num-batched-tokens), with the memory that the KV cache is what is
// left of. It is arithmetic on numbers a simulator plan or a running server reports, with no
// I/O: Build is the one place that puts a Report together from them (the simulator's model,
// the server's log, vllm:cache_config_info, scaled estimates), each figure with its Source,
// so the CLI and the dashboard's Capacity view show the same figures.
package capacity

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Workload is one request's size: its prompt and its output, in tokens.
type Workload struct {
	PromptTokens, OutputTokens int
}

// Tokens is what one request holds in the KV cache at its end.
func (w Workload) Tokens() int { return w.PromptTokens + w.OutputTokens }

// Limits are what a server allows at once. A zero field is unknown (an attached server does
// not report --max-num-seqs), and does not limit.
type Limits struct {
	BlockSize           int // tokens per KV block
	NumBlocks           int // usable KV blocks
	MaxNumSeqs          int // --max-num-seqs
	MaxNumBatchedTokens int // --max-num-batched-tokens: the tokens of one engine step
	MaxModelLen         int // --max-model-len
	// BlocksFor, when set, is the blocks a request of n tokens holds (a hybrid model's groups
	// each hold some); nil is n tokens in blocks of BlockSize.
	BlocksFor func(n int) int
}

// The limiters, named by what a user changes.
const (
	LimitKV      = "KV blocks"
	LimitSeqs    = "--max-num-seqs"
	LimitBatched = "--max-num-batched-tokens"
	LimitLength  = "--max-model-len"
)

// Fit is how a workload fits a server.
type Fit struct {
	// BlocksPerRequest is the request's tokens rounded up to whole blocks; TokensPerRequest
	// is those blocks in tokens.
	BlocksPerRequest, TokensPerRequest int
	// ByKV is how many such requests the KV cache holds at once (at their largest).
	ByKV int
	// Concurrency is the most requests that can run at once: the least of ByKV,
	// --max-num-seqs and --max-num-batched-tokens (each running request takes one token of
	// every step); Limiter names the one that binds first (0 and LimitLength when a request
	// does not fit at all).
	Concurrency int
	Limiter     string
	// PrefillsPerStep is how many whole prompts one step's token budget computes (less
	// than 1: a prompt takes several steps with chunked prefill).
	PrefillsPerStep float64
	// Estimate is true when the figures are scaled from what an attached server reports,
	// not computed from its memory plan.
	Estimate bool
}

// FitWorkload computes how w fits l.
func FitWorkload(l Limits, w Workload) Fit {
	var f Fit
	bs := max(l.BlockSize, 1)
	f.BlocksPerRequest = (w.Tokens() + bs - 1) / bs
	f.TokensPerRequest = f.BlocksPerRequest * bs
	if l.BlocksFor != nil {
		f.BlocksPerRequest = l.BlocksFor(w.Tokens())
	}
	if l.MaxNumBatchedTokens > 0 && w.PromptTokens > 0 {
		f.PrefillsPerStep = float64(l.MaxNumBatchedTokens) / float64(w.PromptTokens)
	}
	if (l.MaxModelLen > 0 && w.Tokens() > l.MaxModelLen) || f.BlocksPerRequest == 0 {
		f.Limiter = LimitLength // vLLM answers such requests with HTTP 400
		return f
	}
	f.ByKV = l.NumBlocks / f.BlocksPerRequest
	f.Concurrency, f.Limiter = f.ByKV, LimitKV
	if l.MaxNumSeqs > 0 && l.MaxNumSeqs < f.Concurrency {
		f.Concurrency, f.Limiter = l.MaxNumSeqs, LimitSeqs
	}
	if l.MaxNumBatchedTokens > 0 && l.MaxNumBatchedTokens < f.Concurrency {
		f.Concurrency, f.Limiter = l.MaxNumBatchedTokens, LimitBatched
	}
	return f
}

// CacheInfo is what a server reports in vllm:cache_config_info (scrape's Capacity): the
// block size, the blocks or the token capacity, the concurrency of max-model-len requests and
// the utilisation it runs with (0 when absent).
type CacheInfo struct {
	BlockSize, NumGPUBlocks, KVCacheTokens int
	MaxConcurrency, Util                   float64
}

// FromCacheInfo estimates how w fits a server from its cache_config_info, with what is known
// of its other limits (zero: unknown). The blocks come from num_gpu_blocks, else from the
// token capacity; the result is marked an estimate (prefix caching, preemption and the
// scheduler's watermark move the real figure).
func FromCacheInfo(c CacheInfo, known Limits, w Workload) (Fit, bool) {
	l := known
	l.BlockSize = c.BlockSize
	switch {
	case c.BlockSize <= 0:
		return Fit{}, false
	case c.NumGPUBlocks > 0:
		l.NumBlocks = c.NumGPUBlocks
	case c.KVCacheTokens > 0:
		l.NumBlocks = c.KVCacheTokens / c.BlockSize
	default:
		return Fit{}, false
	}
	f := FitWorkload(l, w)
	f.Estimate = true
	return f, true
}

// Memory is one GPU's memory plan as vLLM makes it, in GiB: what the KV cache is left of.
type Memory struct {
	TotalGiB, RequestedGiB                                      float64 // the GPU; total x --gpu-memory-utilization
	WeightsGiB, ActivationGiB, NonTorchGiB, CUDAGraphGiB, KVGiB float64
	// GraphsOutsideGiB is the CUDA-graph pool captured after the KV cache out of the memory
	// above the budget, where the profiling reserved none for it.
	GraphsOutsideGiB float64
	// ColdCompile says the activation peak is a first boot's torch.compile temporaries, which a
	// restart with the compile cache warm does not charge.
	ColdCompile bool
	// OtherGiB is what other processes hold on the GPU (--sim-gpu-used-gib): not this server's
	// and not free.
	OtherGiB float64
}

// Column is one setting (as given, or a what-if) and how the workload fits it.
type Column struct {
	Name string // "as given", "--kv-cache-dtype fp8", ...
	// Refused is vLLM's start-up error for this setting, in one line ("" when it starts);
	// the other fields then hold what was computed before it.
	Refused string
	// RefusedBeforeKV: the refusal came before vLLM sized the KV cache (at the model's
	// build or load), so the column has no KV figure, where a refusal for want of KV memory has.
	RefusedBeforeKV bool
	Memory          Memory
	KVTokens        int
	// GPUBlocks is the pool as vLLM logs it (num_gpu_blocks); Limits.NumBlocks is one fewer,
	// vLLM's null block.
	GPUBlocks   int
	Limits      Limits
	MaxConcAtML float64 // vLLM's "Maximum concurrency for max_model_len tokens" figure
	Fit         Fit
}

// Report is the capacity of a server for a workload, each figure with its Source: the
// simulator's memory plan of one model on one GPU with what-ifs (Columns, what
// `vllmtop sim --print-capacity` prints), and what Build puts together from the server's log,
// its vllm:cache_config_info and the predictions.
type Report struct {
	Model, GPU string
	Util       float64
	Workload   Workload
	// Columns are the simulator's plan, the first the setting as given; none without a plan.
	Columns []Column
	PlanErr string // why the simulator, which models the server, has no plan
	// Layout are lines on the GPUs of one engine (tensor and pipeline parallel), if several.
	Layout []string
	// Notes are remarks on the plan as given, printed after the tables.
	Notes []string

	// The server's KV cache now.
	KVTokens, KVBlocks, BlockSize, MaxModelLen Figure[int]
	MaxConcurrency, KVGiB                      Figure[float64] // KVGiB: the memory left for it
	// Fit is how Workload fits: the plan's setting as given, else an estimate.
	Fit Figure[Fit]
	// WhatIf is the KV cache at another utilisation, from WhatIfSource; nil when nothing
	// predicts it, and NoWhatIf says why.
	WhatIf       func(util float64) (tokens int, maxConcurrency float64, err error)
	WhatIfSource Source
	NoWhatIf     string
}

// Bar draws a memory plan as a bar of width cells: W weights, A activation peak, N non-torch,
// G CUDA graphs (inside the budget, or after K when captured above it), K the KV cache, O what
// other processes hold, . the rest of the GPU.
func Bar(m Memory, width int) string {
	if m.TotalGiB <= 0 || width <= 0 {
		return ""
	}
	var b strings.Builder
	used := 0
	part := func(gib float64, c byte) {
		n := int(math.Round(gib / m.TotalGiB * float64(width)))
		n = max(0, min(n, width-used))
		b.WriteString(strings.Repeat(string(c), n))
		used += n
	}
	part(m.WeightsGiB, 'W')
	part(m.ActivationGiB, 'A')
	part(m.NonTorchGiB, 'N')
	part(m.CUDAGraphGiB, 'G')
	part(m.KVGiB, 'K')
	if m.GraphsOutsideGiB > 0 {
		part(math.Max(0, m.RequestedGiB-m.WeightsGiB-m.ActivationGiB-m.NonTorchGiB-m.CUDAGraphGiB-m.KVGiB), '.')
		part(m.GraphsOutsideGiB, 'G')
	}
	part(m.OtherGiB, 'O') // out of what is left above the budget
	b.WriteString(strings.Repeat(".", width-used))
	return b.String()
}

// free is the memory of m that nothing holds: beside the budget once the server holds it, the
// rest of the card where it refused before taking any (used is 0).
func free(m Memory, used float64) float64 {
	held := math.Max(m.RequestedGiB, used)
	if used == 0 {
		held = 0
	}
	return math.Max(0, m.TotalGiB-held-m.GraphsOutsideGiB-m.OtherGiB)
}

// legend names the bar's parts in GiB, within width columns. Graphs captured above the budget
// are said to be, and come out of the free memory.
func legend(m Memory, width int) string {
	graphs := fmt.Sprintf("%.2f", m.CUDAGraphGiB)
	if m.GraphsOutsideGiB > 0 {
		graphs = fmt.Sprintf("%.2f above the budget", m.GraphsOutsideGiB)
	}
	activations := fmt.Sprintf("%.2f", m.ActivationGiB)
	if m.ColdCompile {
		activations += " (cold compile)"
	}
	used := m.WeightsGiB + m.ActivationGiB + m.NonTorchGiB + m.CUDAGraphGiB + m.KVGiB
	parts := []string{fmt.Sprintf("W weights %.2f", m.WeightsGiB), "A activations " + activations,
		fmt.Sprintf("N non-torch %.2f", m.NonTorchGiB), "G graphs " + graphs, fmt.Sprintf("K KV %.2f", m.KVGiB),
		fmt.Sprintf(". free %.2f", free(m, used))}
	if m.OtherGiB > 0 {
		parts = slices.Insert(parts, len(parts)-1, fmt.Sprintf("O other processes %.2f", m.OtherGiB))
	}
	switch {
	case used > m.TotalGiB:
		// The parts do not fit the card (weights larger than it): nothing is free.
		parts[len(parts)-1] = fmt.Sprintf("over the card by %.2f", used-m.TotalGiB)
	case used-m.KVGiB-m.RequestedGiB >= 0.005:
		// The budget is spent before the KV cache: say by how much, as the refusal does not.
		// (A cache pinned in bytes or blocks may pass the budget on its own: not this.)
		parts = append(parts, fmt.Sprintf("over the budget by %.2f", used-m.KVGiB-m.RequestedGiB))
	}
	var lines []string
	line := "GiB:"
	for i, p := range parts {
		sep := "  "
		if i == 0 {
			sep = " "
		}
		if i > 0 && len(line)+len(sep)+len(p) > width {
			lines = append(lines, line)
			line, sep = "    ", " "
		}
		line += sep + p
	}
	return strings.Join(append(lines, line), "\n") + "\n\n"
}

// tokensFollowLength reports whether a what-if keeps the KV blocks as given and still reports
// other KV tokens: vLLM's token figure then depends on --max-model-len.
func tokensFollowLength(cols []Column) bool {
	for _, c := range cols[1:] {
		if c.Refused == "" && c.GPUBlocks == cols[0].GPUBlocks && c.KVTokens != cols[0].KVTokens {
			return true
		}
	}
	return false
}

// writeTable writes rows (a label column, then one column per setting) within width columns:
// the settings that do not fit beside the others go in a second table below, under the same
// labels.
func writeTable(b *strings.Builder, rows [][]string, width int) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len(cell))
		}
	}
	for first := 1; first < len(widths); {
		last, used := first, widths[0]+2+widths[first]
		for last+1 < len(widths) && used+2+widths[last+1] <= width {
			last++
			used += 2 + widths[last]
		}
		if first > 1 {
			b.WriteString("\n")
		}
		for _, row := range rows {
			fmt.Fprintf(b, "%-*s", widths[0], row[0])
			for i := first; i <= last; i++ {
				fmt.Fprintf(b, "  %*s", widths[i], row[i])
			}
			b.WriteString("\n")
		}
		first = last + 1
	}
}

// Render writes the report for a terminal of width columns: the memory bar of the setting
// as given, then one column per setting with its KV cache, the requests that fit and what
// limits first, marking the settings vLLM would refuse.
func (r Report) Render(width int) string {
	var b strings.Builder
	width = max(width, 60)
	b.WriteString(wrapWords(fmt.Sprintf("%s on %s, --gpu-memory-utilization %g:", r.Model, r.GPU, r.Util), width, "  ") + "\n")
	fmt.Fprintf(&b, "the plan for a request of %d prompt + %d output tokens\n\n", r.Workload.PromptTokens, r.Workload.OutputTokens)
	if len(r.Layout) > 0 {
		for _, line := range r.Layout {
			lead := line[:len(line)-len(strings.TrimLeft(line, " "))]
			b.WriteString(lead + wrapWords(line, width-len(lead), lead+"  ") + "\n")
		}
		b.WriteString("\n")
	}
	if len(r.Columns) == 0 {
		return b.String()
	}
	m := r.Columns[0].Memory
	fmt.Fprintf(&b, "Memory of %.2f GiB (%.2f GiB requested):\n[%s]\n", m.TotalGiB, m.RequestedGiB, Bar(m, width-2))
	b.WriteString(legend(m, width))
	rows := [][]string{{""}, {"KV cache (GiB)"}, {"KV cache tokens"}, {"KV blocks"}, {"tokens a request (blocks)"},
		{"requests that fit in KV"}, {"--max-num-seqs"}, {"--max-num-batched-tokens"}, {"max running requests"}, {"limits first"},
		{"prompts prefilled a step"}, {"max conc. at max-model-len"}}
	for _, c := range r.Columns {
		f, l := c.Fit, c.Limits
		cells := []string{c.Name, fmt.Sprintf("%.2f", c.Memory.KVGiB), thousands(c.KVTokens), fmt.Sprintf("%s x %d", thousands(c.GPUBlocks), l.BlockSize),
			fmt.Sprintf("%s (%s)", thousands(f.TokensPerRequest), thousands(f.BlocksPerRequest)), thousands(f.ByKV), thousands(l.MaxNumSeqs), thousands(l.MaxNumBatchedTokens),
			thousands(f.Concurrency), f.Limiter, fmt.Sprintf("%.1f", f.PrefillsPerStep), fmt.Sprintf("%.2fx", c.MaxConcAtML)}
		switch {
		case c.Refused != "":
			if c.RefusedBeforeKV {
				cells[1] = "-"
			}
			cells = append(cells[:2], "-", "-", "-", "-", "-", "-", "-", "REFUSED", "-", "-")
		case f.Limiter == LimitLength:
			// No such request runs: none fits, none prefills.
			cells[5], cells[8], cells[10] = "-", "-", "-"
		}
		for i := range rows {
			rows[i] = append(rows[i], cells[i])
		}
	}
	writeTable(&b, rows, width)
	b.WriteString("\n" + wrapWords(whatIfLegend(r.Columns)+"Requests are counted at their largest (prompt + output, in whole blocks).", width, "") + "\n")
	if tokensFollowLength(r.Columns) {
		b.WriteString(wrapWords("KV cache tokens is vLLM's figure: the --max-model-len requests that fit, times that length. A "+
			"request's blocks in sliding-window or linear-attention layers stop growing with its length, so the same blocks give "+
			"other tokens at another --max-model-len.", width, "") + "\n")
	}
	if l, ok := tooLong(r.Columns); ok {
		b.WriteString(wrapWords(fmt.Sprintf("A request of %s tokens is longer than --max-model-len %s where the table says so: vLLM "+
			"answers it with HTTP 400 and runs none.", thousands(r.Workload.Tokens()), thousands(l)), width, "") + "\n")
	}
	for _, g := range refusalGroups(r.Columns) {
		b.WriteString(wrapWords("REFUSED "+strings.Join(g.names, ", ")+": "+g.gist, width, "  ") + "\n")
	}
	for _, note := range r.Notes {
		b.WriteString(wrapWords(note, width, "") + "\n")
	}
	return b.String()
}

// The what-if columns' names: the first setting as given, then these.
const (
	WhatIfFP8KV      = "fp8 KV"
	WhatIfAWQ        = "awq"
	WhatIfGPTQ       = "gptq"
	WhatIfFP8Weights = "fp8 weights"
	WhatIfMaxLen     = "max-len " // followed by the length
)

// whatIfLegend says what the table's what-if columns are, naming only those it has.
func whatIfLegend(cols []Column) string {
	var kv, maxLen string
	var builds []string
	for _, c := range cols[1:] {
		switch c.Name {
		case WhatIfFP8KV:
			kv = WhatIfFP8KV + " is --kv-cache-dtype fp8"
		case WhatIfAWQ, WhatIfGPTQ, WhatIfFP8Weights:
			builds = append(builds, c.Name)
		default:
			if n, ok := strings.CutPrefix(c.Name, WhatIfMaxLen); ok {
				maxLen = c.Name + " is --max-model-len " + n
			}
		}
	}
	var parts []string
	if kv != "" {
		parts = append(parts, kv)
	}
	if len(builds) == 1 {
		parts = append(parts, builds[0]+" is a build of the model quantized that way (--sim-checkpoint-quantization)")
	} else if len(builds) > 1 {
		parts = append(parts, joinAnd(builds)+" are builds of the model quantized that way (--sim-checkpoint-quantization)")
	}
	if maxLen != "" {
		parts = append(parts, maxLen)
	}
	if len(parts) == 0 {
		return ""
	}
	return "What-ifs: " + strings.Join(parts, "; ") + ". "
}

// joinAnd joins names as a sentence lists them: "a", "a and b", "a, b and c".
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// tooLong reports whether the request is longer than a column's --max-model-len, and the
// first such length.
func tooLong(cols []Column) (int, bool) {
	for _, c := range cols {
		if c.Refused == "" && c.Fit.Limiter == LimitLength {
			return c.Limits.MaxModelLen, true
		}
	}
	return 0, false
}

// refusalGroup is the settings vLLM refuses with the same words.
type refusalGroup struct {
	names []string
	gist  string
}

// refusalGroups gathers the refused columns by the gist of their refusal, in column order, so
// that one reason the card gives for every setting is written once.
func refusalGroups(cols []Column) []refusalGroup {
	var groups []refusalGroup
	for _, c := range cols {
		if c.Refused == "" {
			continue
		}
		gist := refusalGist(c.Refused)
		i := slices.IndexFunc(groups, func(g refusalGroup) bool { return g.gist == gist })
		if i < 0 {
			groups = append(groups, refusalGroup{gist: gist})
			i = len(groups) - 1
		}
		groups[i].names = append(groups[i].names, c.Name)
	}
	return groups
}

// refusalGist is the part of vLLM's refusal a user acts on: its first sentence, the one
// that names the longest max_model_len that would fit, if it has one, the flag it says to
// re-run with, and the reasons a backend is not valid.
func refusalGist(msg string) string {
	parts := strings.SplitAfter(msg, ". ")
	out := parts[0]
	for _, p := range parts[1:] {
		if strings.Contains(p, "maximum model length") || strings.HasPrefix(p, "Re-run with") || strings.HasPrefix(p, "Reason:") {
			out += p
		}
	}
	return strings.TrimSpace(out)
}

// wrapWords breaks s into lines of at most width columns at spaces, the lines after the first
// indented.
func wrapWords(s string, width int, indent string) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = indent + w
			continue
		}
		if line == "" {
			line = w
		} else {
			line += " " + w
		}
	}
	return strings.Join(append(lines, line), "\n")
}

// thousands writes n with comma groups.
func thousands(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
