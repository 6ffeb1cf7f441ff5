package capacity

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeModel is a simulator's model whose plan is one column: 1,000 blocks of 16, 10 GiB of KV
// cache, --max-model-len 8192; plans counts the plans it made.
func fakeModel(plans *int) *Model {
	return &Model{
		At: func(u float64) (int, float64, error) { return int(u * 20000), u * 2, nil },
		Plan: func(u float64, w Workload) (Report, error) {
			*plans++
			l := Limits{BlockSize: 16, NumBlocks: 1000, MaxNumSeqs: 256, MaxModelLen: 8192}
			return Report{Model: "m", GPU: "L4", Util: u, Workload: w, Columns: []Column{{Name: "as given",
				Memory: Memory{TotalGiB: 22, KVGiB: 10}, KVTokens: 16000, Limits: l, MaxConcAtML: 1.95, Fit: FitWorkload(l, w)}}}, nil
		},
	}
}

// Each figure comes from the first source that has it, and says which.
func TestBuildGivesEachFigureItsSource(t *testing.T) {
	w := Workload{PromptTokens: 256, OutputTokens: 128}
	logged := Logged{Util: 0.9, KVTokens: 540000, KVBlocks: 33750, MaxConcurrency: 4.12, MaxModelLen: 131072, KVGiB: 54, WeightsGiB: 15}
	cache := CacheInfo{BlockSize: 16, NumGPUBlocks: 29045, KVCacheTokens: 464720, MaxConcurrency: 3.55, Util: 0.92}
	scaledTok, scaledConc, err := Scaled(logged, 0.9)(0.95)
	require.NoError(t, err)
	type src struct{ tok, blocks, blockSize, maxLen, conc, kvGiB, fit, whatIf Source }
	cases := []struct {
		name     string
		known    func() Known
		want     src
		tok      int
		conc     float64
		noWhatIf string
	}{
		{"simulator plan only", func() Known { var n int; return Known{Util: 0.9, Workload: w, Sim: fakeModel(&n)} },
			src{SimulatorModel, Unknown, SimulatorModel, SimulatorModel, SimulatorModel, SimulatorModel, SimulatorModel, SimulatorModel}, 18000, 1.8, ""},
		{"log only", func() Known { return Known{Util: 0.9, Workload: w, Log: logged} },
			src{FromLog, FromLog, Unknown, FromLog, FromLog, FromLog, Unknown, ScaledEstimate}, 540000, 4.12, ""},
		{"cache_config_info only, attached", func() Known { return Known{Workload: w, Cache: cache, Attached: true} },
			src{FromCacheConfig, FromCacheConfig, FromCacheConfig, Unknown, FromCacheConfig, Unknown, EstimatedFromCacheConfig, Unknown}, 464720, 3.55,
			"a what-if needs the server's log (the weights' size): an attached server reports only its current capacity"},
		{"log, then a restart at 0.95 before the server logs again", func() Known { return Known{Util: 0.95, Workload: w, Log: logged} },
			src{ScaledEstimate, Unknown, Unknown, FromLog, ScaledEstimate, ScaledEstimate, Unknown, ScaledEstimate}, scaledTok, scaledConc, ""},
		{"the log comes before cache_config_info; its block size fits the workload", func() Known {
			c := cache
			c.Util = 0.9
			return Known{Util: 0.9, Workload: w, Log: logged, Cache: c}
		}, src{FromLog, FromLog, FromCacheConfig, FromLog, FromLog, FromLog, EstimatedFromCacheConfig, ScaledEstimate}, 540000, 4.12, ""},
		{"cache_config_info of another utilisation is stale", func() Known { return Known{Util: 0.95, Workload: w, Log: logged, Cache: cache} },
			src{ScaledEstimate, Unknown, FromCacheConfig, FromLog, ScaledEstimate, ScaledEstimate, EstimatedFromCacheConfig, ScaledEstimate}, scaledTok, scaledConc, ""},
		{"a simulator restarting at 0.95: its model before the scaled log", func() Known {
			var n int
			return Known{Util: 0.95, Workload: w, Log: logged, Sim: fakeModel(&n)}
		}, src{SimulatorModel, Unknown, SimulatorModel, FromLog, SimulatorModel, SimulatorModel, SimulatorModel, SimulatorModel}, 19000, 1.9, ""},
		{"nothing known", func() Known { return Known{Util: 0.9, Workload: w} },
			src{}, 0, 0, "a what-if needs the server's KV cache size and weights, from its log"},
	}
	for _, c := range cases {
		r := Build(c.known())
		got := src{r.KVTokens.Source, r.KVBlocks.Source, r.BlockSize.Source, r.MaxModelLen.Source, r.MaxConcurrency.Source,
			r.KVGiB.Source, r.Fit.Source, r.WhatIfSource}
		assert.Equal(t, c.want, got, c.name)
		assert.Equal(t, c.tok, r.KVTokens.V, c.name)
		assert.InDelta(t, c.conc, r.MaxConcurrency.V, 1e-9, c.name)
		assert.Equal(t, c.want.whatIf != Unknown, r.WhatIf != nil, c.name)
		assert.Equal(t, c.noWhatIf, r.NoWhatIf, c.name)
	}
}

func TestBuildFigures(t *testing.T) {
	w := Workload{PromptTokens: 256, OutputTokens: 128}
	r := Build(Known{Workload: w, Cache: CacheInfo{BlockSize: 16, NumGPUBlocks: 29045, KVCacheTokens: 464720, Util: 0.92}})
	assert.Equal(t, 0.92, r.Util, "the utilisation cache_config_info reports when none is known")
	assert.Equal(t, 1210, r.Fit.V.ByKV, "29,045 blocks of 16; 384 tokens are 24 blocks")
	assert.True(t, r.Fit.V.Estimate)
	r = Build(Known{DefaultUtil: 0.92, Cache: CacheInfo{KVCacheTokens: 400000, Util: 0.8}})
	assert.Equal(t, 0.8, r.Util, "what the server reports before what the dashboard assumes")
	assert.Equal(t, Figure[int]{400000, FromCacheConfig}, r.KVTokens)
	r = Build(Known{DefaultUtil: 0.92, Log: Logged{KVTokens: 400000}})
	assert.Equal(t, 0.92, r.Util)
	assert.Equal(t, Figure[int]{400000, FromLog}, r.KVTokens, "a log of unknown utilisation is this run's")

	var plans int
	m := fakeModel(&plans)
	r = Build(Known{Util: 0.9, Workload: w, Sim: m, Log: Logged{Util: 0.9, KVTokens: 17000, MaxModelLen: 8192}})
	require.Len(t, r.Columns, 1)
	assert.Equal(t, "L4", r.GPU)
	assert.Equal(t, Figure[int]{17000, FromLog}, r.KVTokens, "what the server logged, not the model")
	assert.Equal(t, Figure[float64]{10, SimulatorModel}, r.KVGiB)
	assert.Equal(t, r.Columns[0].Fit, r.Fit.V)
	assert.Equal(t, []string{"block size and max conc: simulator model"}, r.Sources())
	tok, _, err := r.WhatIf(0.5)
	require.NoError(t, err)
	assert.Equal(t, 10000, tok, "the model's what-if")
	Build(Known{Util: 0.9001, Workload: w, Sim: m})
	assert.Equal(t, 1, plans, "the plan is memoised by utilisation (to two decimals) and workload")
	Build(Known{Util: 0.9, Workload: Workload{PromptTokens: 1, OutputTokens: 1}, Sim: m})
	assert.Equal(t, 2, plans)

	m = &Model{Plan: func(float64, Workload) (Report, error) { return Report{}, errors.New("no such model") }}
	r = Build(Known{Util: 0.9, Workload: w, Sim: m})
	assert.Equal(t, "no such model", r.PlanErr)
	assert.False(t, r.Fit.Known())
}

func TestScaled(t *testing.T) {
	l := Logged{KVTokens: 540000, MaxConcurrency: 4, KVGiB: 54, WeightsGiB: 15}
	assert.Nil(t, Scaled(Logged{}, 0.92), "nothing logged yet")
	assert.Nil(t, Scaled(l, 0), "utilisation unknown")
	f := Scaled(l, 0.9)
	require.NotNil(t, f)
	tok, conc, err := f(0.9)
	require.NoError(t, err)
	assert.Equal(t, 540000, tok, "the running utilisation predicts what was logged")
	assert.InDelta(t, 4, conc, 1e-9)
	more, _, err := f(0.95)
	require.NoError(t, err)
	assert.Greater(t, more, tok)
	_, _, err = f(0.1)
	assert.EqualError(t, err, "no memory for the KV cache")
}

func TestSourceWords(t *testing.T) {
	for s, want := range map[Source][2]string{
		FromLog:                  {"from the log", "from the server's log"},
		FromCacheConfig:          {"from cache_config_info", "from vllm:cache_config_info"},
		EstimatedFromCacheConfig: {"estimated from cache_config_info", "estimated from vllm:cache_config_info"},
		SimulatorModel:           {"simulator model", "the simulator's capacity model"},
		ScaledEstimate:           {"scaled estimate", "scaled from what the server's log reported"},
	} {
		assert.Equal(t, want, [2]string{s.String(), s.Phrase()})
		assert.Equal(t, s == FromLog || s == FromCacheConfig, s.Reported(), s.String())
	}
}

// What the simulator's plan says beside its table reaches the report the Capacity view draws.
func TestBuildKeepsThePlansNotes(t *testing.T) {
	m := &Model{Plan: func(u float64, w Workload) (Report, error) {
		return Report{Columns: []Column{{Name: "as given"}}, Notes: []string{"The checkpoint declares an FP8 KV cache"}}, nil
	}}
	r := Build(Known{Util: 0.9, Workload: Workload{PromptTokens: 256, OutputTokens: 128}, Sim: m})
	assert.Equal(t, []string{"The checkpoint declares an FP8 KV cache"}, r.Notes)
}
