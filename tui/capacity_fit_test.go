package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/stretchr/testify/assert"

	"github.com/vllmtop/vllmtop/server/sim/capacity"
	"github.com/vllmtop/vllmtop/themes"
)

// Graphs captured after the KV cache (vLLM 0.25-0.28's V2 runner) are named as above the
// budget, and the free memory is what they leave.
func TestMemoryBarNamesGraphsAboveTheBudget(t *testing.T) {
	th, _ := themes.ByName("dark")
	st := NewStyles(th, true)
	m := capacity.Memory{TotalGiB: 20, RequestedGiB: 18, WeightsGiB: 10, ActivationGiB: 1, NonTorchGiB: 0.5, KVGiB: 6.5, GraphsOutsideGiB: 1}
	text := strings.Join(memoryBar(&st, m, 120), "\n")
	assert.Contains(t, text, "G graphs 1.00 above the budget")
	assert.Contains(t, text, ". free 1.00 GiB")
	m.CUDAGraphGiB, m.KVGiB, m.GraphsOutsideGiB = 1, 5.5, 0
	text = strings.Join(memoryBar(&st, m, 120), "\n")
	assert.Contains(t, text, "G graphs 1.00 ·")
	assert.Contains(t, text, ". free 2.00 GiB")
}

// A pane cut by a short terminal says how much is below instead of hiding it.
func TestFitMoreSaysWhatIsCut(t *testing.T) {
	th, _ := themes.ByName("dark")
	st := NewStyles(th, true)
	got := strings.Split(fitMore(&st, "a\nb\nc\nd\ne\n\n", 10, 3), "\n")
	assert.Len(t, got, 3)
	assert.Equal(t, "a", strings.TrimSpace(got[0]))
	assert.Contains(t, got[2], "… 3 more")
	assert.NotContains(t, fitMore(&st, "a\nb\nc\n\n", 10, 3), "more", "trailing blank lines are not content")
}

// A refusal too long for one line takes two, so vLLM's advice at its end is read; a longer one
// is cut on the second.
func TestRefusalKeepsItsAdviceOnTwoLines(t *testing.T) {
	th, _ := themes.ByName("dark")
	st := NewStyles(th, true)
	msg := "REFUSED fp8 KV: ValueError: FP8 KV cache is not supported by the Triton attention backend on Tesla T4 (compute capability 7.5); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype float16."
	lines := refusalLines(&st, msg, 120)
	assert.Len(t, lines, 2)
	assert.Contains(t, lines[1], "Re-run with --kv-cache-dtype float16.")
	for _, l := range refusalLines(&st, msg, 60) {
		assert.LessOrEqual(t, lipgloss.Width(l), 60, l)
	}
	assert.Len(t, refusalLines(&st, msg, 60), 2)
	assert.Len(t, refusalLines(&st, "REFUSED awq: short", 60), 1)
}

// The plan's notes follow its what-ifs, muted, two lines each at most.
func TestFitShowsThePlansNotes(t *testing.T) {
	th, _ := themes.ByName("dark")
	st := NewStyles(th, true)
	r := capacity.Report{Workload: capacity.Workload{PromptTokens: 256, OutputTokens: 128},
		Columns: []capacity.Column{{Name: "as given", KVTokens: 1000}},
		Notes:   []string{"The checkpoint declares an FP8 KV cache, which vLLM takes: the cache is fp8 (--kv-cache-dtype bfloat16 keeps it in the model's dtype)."}}
	text := strings.Join(renderFit(&st, r, 60), "\n")
	assert.Contains(t, text, "The checkpoint declares an FP8 KV cache")
	assert.Contains(t, text, "(--kv-cache-dtype bfloat16 keeps it in")
}
