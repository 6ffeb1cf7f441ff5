package capacity

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestGraphsAboveTheBudget: graphs captured out of the memory above the budget are drawn after
// the KV cache, named so, and taken from the free memory.
func TestGraphsAboveTheBudget(t *testing.T) {
	m := Memory{TotalGiB: 20, RequestedGiB: 18, WeightsGiB: 10, ActivationGiB: 1, NonTorchGiB: 0.5, KVGiB: 6.5, GraphsOutsideGiB: 1}
	bar := Bar(m, 40)
	assert.Len(t, bar, 40)
	assert.True(t, strings.HasSuffix(bar, "KKGG.."), bar)
	out := Report{Model: "m", GPU: "g", Util: 0.9, Columns: []Column{{Name: "as given", Memory: m}}}.Render(160)
	assert.Contains(t, out, "G graphs 1.00 above the budget  K KV 6.50  . free 1.00\n")

	m.CUDAGraphGiB, m.KVGiB, m.GraphsOutsideGiB = 1, 5.5, 0
	bar = Bar(m, 40)
	assert.True(t, strings.HasSuffix(bar, "GGKKKKKKKKKKK...."), bar)
	out = Report{Model: "m", GPU: "g", Util: 0.9, Columns: []Column{{Name: "as given", Memory: m}}}.Render(100)
	assert.Contains(t, out, "G graphs 1.00  K KV 5.50  . free 2.00\n")
}

// TestLegendWraps: the legend breaks between its parts to stay within the width, and says when
// the activation peak is a cold compile's.
func TestLegendWraps(t *testing.T) {
	m := Memory{TotalGiB: 20, RequestedGiB: 18, WeightsGiB: 10, ActivationGiB: 1.92, NonTorchGiB: 0.5, KVGiB: 4.5, GraphsOutsideGiB: 1, ColdCompile: true}
	for _, width := range []int{60, 80, 100} {
		got := legend(m, width)
		for _, line := range strings.Split(strings.TrimRight(got, "\n"), "\n") {
			assert.LessOrEqual(t, len(line), width, "%d: %q", width, line)
		}
		flat := strings.Join(strings.Fields(got), " ")
		assert.Equal(t, "GiB: W weights 10.00 A activations 1.92 (cold compile) N non-torch 0.50 G graphs 1.00 above the budget K KV 4.50 . free 1.00", flat, width)
	}
	assert.Equal(t, 1, strings.Count(strings.TrimRight(legend(m, 200), "\n"), "\n")+1, "one line when it fits")
}
