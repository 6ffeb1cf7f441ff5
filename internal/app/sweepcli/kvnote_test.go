package sweepcli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/vllmtop/vllmtop/internal/app/benchcli"
	"github.com/vllmtop/vllmtop/loadgen"
)

func kneeResult(knee int, tokensPerRequest int) loadgen.SLOResult {
	doc := loadgen.ResultDoc{{Key: "completed", Value: 10}, {Key: "total_input_tokens", Value: 10 * (tokensPerRequest - 100)},
		{Key: "total_output_tokens", Value: 10 * 100}, {Key: "request_throughput", Value: loadgen.PyFloat(4)}, {Key: "mean_e2el_ms", Value: loadgen.PyFloat(2500)}}
	return loadgen.SLOResult{Knee: knee, Probes: []loadgen.SLOProbe{{Value: knee, Docs: []loadgen.ResultDoc{doc}}}}
}

func TestKneeKVIsTheInFlightTokensOverTheCache(t *testing.T) {
	share, ok := kneeKV(loadgen.SLOConcurrency, kneeResult(10, 1408), 464720)
	assert.True(t, ok)
	assert.InDelta(t, 10*1408/464720.0, share, 1e-9, "C=10 of 1,408-token requests: 3% of 464,720 tokens")
	share, ok = kneeKV(loadgen.SLORate, kneeResult(4, 1000), 100000)
	assert.True(t, ok)
	assert.InDelta(t, 4*2.5*1000/100000.0, share, 1e-9, "4 req/s for 2.5 s each: 10 in flight")
	_, ok = kneeKV(loadgen.SLOConcurrency, loadgen.SLOResult{}, 1000)
	assert.False(t, ok, "no knee: nothing to judge")
}

func TestKVNoteOnlyWhenEveryKneeLeftTheCacheFarFromFull(t *testing.T) {
	cfg := &Config{Search: benchcli.Search{Variable: loadgen.SLOConcurrency, SLOs: []loadgen.SLO{{{Metric: "p99_ttft_ms", Op: "<=", Target: 500}}}}}
	setting := func(knee, tokens, kv int) Setting {
		return Setting{Capacity: capacityFields(kv, 1, 4096, 1, 1), Searches: []benchcli.Curve{{Result: kneeResult(knee, tokens)}}}
	}
	low := []Setting{setting(10, 1408, 464720), setting(19, 1408, 500000)}
	assert.Equal(t, "Utilisation is not the limit here: at each knee the requests in flight hold at most 5% of the KV cache; "+
		"the knee is set by the SLO's latency (p99_ttft_ms<=500.00), which more KV memory does not lower.", cfg.kvNote(low))
	full := append(low, setting(300, 1408, 464720))
	assert.Empty(t, cfg.kvNote(full), "one knee near full: utilisation may matter")
	assert.Empty(t, cfg.kvNote(nil))
}
