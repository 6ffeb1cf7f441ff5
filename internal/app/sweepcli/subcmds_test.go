package sweepcli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The levels between serial and batch are numpy's linspace without its ends, rounded half to
// even as Python rounds, without repeats.
func TestScanLevelsAsNumpyAndPython(t *testing.T) {
	assert.Equal(t, []int{12, 23, 34, 45, 56, 67, 78, 89}, ScanLevels(1, 100, 10))
	assert.Equal(t, []int{2, 4}, ScanLevels(1, 5, 4), "2.333 -> 2, 3.667 -> 4")
	assert.Equal(t, []int{2}, ScanLevels(1, 3, 3))
	assert.Equal(t, []int{2}, ScanLevels(1, 3, 4), "1.667 and 2.333 both round to 2: run once")
	assert.Equal(t, []int{2}, ScanLevels(1, 4, 3), "2.5 rounds to even 2")
	assert.Empty(t, ScanLevels(1, 50, 2), "two iterations: serial and batch only")
}

func TestParetoFrontierAsVLLM(t *testing.T) {
	pts := []paretoPoint{{User: 100, GPU: 200, Label: "c1"}, {User: 50, GPU: 800, Label: "c8"}, {User: 40, GPU: 700, Label: "dominated"},
		{User: 20, GPU: 1500, Label: "c32"}, {User: 20, GPU: 1500, Label: "tie"}}
	var labels []string
	for _, p := range ParetoFrontier(pts) {
		labels = append(labels, p.Label)
	}
	assert.Equal(t, []string{"c32", "tie", "c8", "c1"}, labels, "every point no other beats on both axes, by tokens/s/user")
}

func TestPlotFilters(t *testing.T) {
	fs, err := ParseFilters("max_concurrency<1000,max_num_batched_tokens<=4096,backend==vllm,request_rate!='inf'")
	require.NoError(t, err)
	require.Len(t, fs, 4)
	assert.Equal(t, Filter{Var: "max_num_batched_tokens", Op: "<=", Target: "4096"}, fs[1])
	assert.Equal(t, "inf", fs[3].Target, "quotes stripped")
	r := Record{"max_concurrency": json.Number("8"), "max_num_batched_tokens": json.Number("4096"), "backend": "vllm", "request_rate": "inf"}
	for i, f := range fs[:3] {
		assert.True(t, f.keep(r), "filter %d", i)
	}
	assert.False(t, fs[3].keep(r), "request_rate is inf")
	_, err = ParseFilters("max_concurrency~3")
	assert.ErrorContains(t, err, "invalid operator")
	bins, err := ParseBinners("request_throughput%5")
	require.NoError(t, err)
	got := filterAndBin([]Record{{"request_throughput": json.Number("13.7")}}, nil, bins)
	v, _ := got[0].Num("request_throughput")
	assert.Equal(t, 10.0, v)
}

func TestStartupArgsAndPercentiles(t *testing.T) {
	args, iters, err := StartupArgs([]string{"vllm", "bench", "startup", "--model", "Qwen/Qwen3-0.6B", "--num-iters-cold", "2",
		"--num_iters_warm=4", "--output-json", "x.json", "--max-num-seqs", "8"})
	require.NoError(t, err)
	assert.Equal(t, []string{"--model", "Qwen/Qwen3-0.6B", "--max-num-seqs", "8"}, args, "the engine's flags go to the simulator")
	assert.Equal(t, [3]int{2, 1, 4}, iters)
	_, _, err = StartupArgs([]string{"python", "x.py"})
	assert.ErrorContains(t, err, "want vllm bench startup")
	assert.InDelta(t, 1.3, percentile([]float64{1, 2, 4}, 15), 1e-12, "numpy's linear interpolation")
	assert.Equal(t, 4.0, percentile([]float64{4, 1, 2}, 100), "sorted first")
	assert.Equal(t, []string{"a", "--x", "1"}, stripFlag([]string{"a", "--output-json", "p", "--output_json=q", "--x", "1"}, "--output-json"))
}

func TestLinkVars(t *testing.T) {
	lv, err := ParseLinkVars("max_num_seqs=max_concurrency, max_model_len = random_input_len")
	require.NoError(t, err)
	assert.Equal(t, [][2]string{{"max_num_seqs", "max_concurrency"}, {"max_model_len", "random_input_len"}}, lv)
	_, err = ParseLinkVars("a=b=c")
	assert.Error(t, err)
	cfg := &Config{Serve: Serve{LinkVars: lv[:1]}}
	sc := Combo{Params: []Param{{Key: "max_num_seqs", Value: json.Number("8")}}}
	assert.True(t, cfg.linked(sc, Combo{Params: []Param{{Key: "max-concurrency", Value: json.Number("8.0")}}}), "8 == 8.0, either spelling")
	assert.False(t, cfg.linked(sc, Combo{Params: []Param{{Key: "max_concurrency", Value: json.Number("16")}}}))
	assert.False(t, cfg.linked(sc, Combo{}), "a side without its key does not run")
}
