package loadgen

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// vllm bench serve's lines before the measured requests (benchmark() in serve.py).
func TestPrintTrafficIsVLLMsLines(t *testing.T) {
	cases := []struct {
		info RunInfo
		want string
	}{
		{RunInfo{RequestRate: math.Inf(1), Burstiness: 1},
			"Traffic request rate: inf\nBurstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: None\n"},
		{RunInfo{RequestRate: 5, Burstiness: 0.5, MaxConcurrency: 8},
			"Traffic request rate: 5.0\nBurstiness factor: 0.5 (Gamma distribution)\nMaximum request concurrency: 8\n"},
		{RunInfo{RequestRate: 2.5, Burstiness: math.Inf(1)},
			"Traffic request rate: 2.5\nBurstiness factor: inf (Gamma distribution)\nMaximum request concurrency: None\n"},
		{RunInfo{RequestRate: math.Inf(1), Burstiness: 1, Ramp: Ramp{Strategy: RampLinear, StartRPS: 1, EndRPS: 10}},
			"Traffic ramp-up strategy: linear.\nWill increase RPS from 1 to 10 RPS over the duration of the benchmark.\n" +
				"Burstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: None\n"},
	}
	for _, tc := range cases {
		var b bytes.Buffer
		PrintTraffic(&b, tc.info)
		assert.Equal(t, tc.want, b.String())
	}
}
