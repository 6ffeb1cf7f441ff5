package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/loadgen"
)

// The dataset flags' defaults are vllm bench serve's (vllm/benchmarks/datasets/datasets.py,
// add_dataset_parser).
func TestBenchDatasetFlagsDefaultAsVLLM(t *testing.T) {
	o, err := parseBench(t, nil, nil)
	require.NoError(t, err)
	x := o.Dataset.Extra
	assert.Equal(t, 256, x.CustomOutputLen)
	assert.Equal(t, 256, x.SpecBenchOutputLen)
	assert.Equal(t, loadgen.SonnetConfig{InputLen: 550, OutputLen: 150, PrefixLen: 200}, x.Sonnet)
	assert.Equal(t, loadgen.PrefixRepetitionConfig{PrefixLen: 256, SuffixLen: 256, NumPrefixes: 10, OutputLen: 128}, x.PrefixRepetition)
	assert.Equal(t, loadgen.TimedTraceConfig{ChunkSize: 16, SecMultiplier: 1, LabelTimestamp: "timestamp", LabelInput: "input_length",
		LabelOutput: "output_length", LabelHashIDs: "hash_ids"}, x.TimedTrace)
	assert.Equal(t, loadgen.RandomMMConfig{BaseItems: 1, Limits: map[string]int{"image": 255, "video": 1},
		Buckets: []loadgen.MMBucket{{Height: 256, Width: 256, Frames: 1, Prob: 0.5}, {Height: 720, Width: 1280, Frames: 1, Prob: 0.5}, {Height: 720, Width: 1280, Frames: 16}}}, x.MM)
	assert.Equal(t, loadgen.HFConfig{}, x.HF)
	assert.False(t, x.NoOversample || x.DisableShuffle || x.SkipChatTemplate)
	assert.Equal(t, 1000, x.NumPrompts)
}

func TestBenchDatasetFlagsParse(t *testing.T) {
	o, err := parseBench(t, []string{"--random-range-ratio", `{"input": 0.25, "output": 0.5}`, "--random-mm-limit-mm-per-prompt", `{"image": 3, "video": 0}`,
		"--random-mm-bucket-config", "{(224, 224, 1): 1.0}", "--endpoint", "/v1/chat/completions"}, nil)
	require.NoError(t, err)
	r := o.Dataset.Random
	assert.Equal(t, 0.25, r.RangeRatio)
	require.NotNil(t, r.OutputRangeRatio)
	assert.Equal(t, 0.5, *r.OutputRangeRatio)
	assert.Equal(t, map[string]int{"image": 3, "video": 0}, o.Dataset.Extra.MM.Limits)
	assert.Equal(t, []loadgen.MMBucket{{Height: 224, Width: 224, Frames: 1, Prob: 1}}, o.Dataset.Extra.MM.Buckets)
	assert.True(t, o.Dataset.Extra.Chat)

	trace := []string{"--dataset-name", "timed_trace", "--dataset-path", "testdata/vllm-timed-trace.jsonl"}
	o, err = parseBench(t, trace, nil)
	require.NoError(t, err)
	assert.False(t, o.Dataset.Trace.Sample, "vLLM sends a timed_trace at its timestamps by default (self_timed None is True)")
	assert.Equal(t, 1000, o.Runs.NumPrompts)
	o, err = parseBench(t, append(trace, "--no-self-timed"), nil)
	require.NoError(t, err)
	assert.True(t, o.Dataset.Trace.Sample, "--no-self-timed: at --request-rate")
	assert.Equal(t, 1000, o.Runs.NumPrompts, "and its first --num-prompts lines")
	o, err = parseBench(t, append(trace, "--self-timed"), nil)
	require.NoError(t, err)
	assert.False(t, o.Dataset.Trace.Sample, "--self-timed: at the timestamps")
	o, err = parseBench(t, append(trace, "--self-timed", "--no-self-timed"), nil)
	require.NoError(t, err)
	assert.True(t, o.Dataset.Trace.Sample)
}
