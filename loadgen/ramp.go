package loadgen

import (
	"fmt"
	"math"
)

// Ramp-up strategies of vllm bench serve's --ramp-up-strategy.
const (
	RampLinear      = "linear"
	RampExponential = "exponential"
)

// Ramp is vllm bench serve's ramp-up: the rate of the i-th of n requests goes from StartRPS
// to EndRPS, in proportion to i/(n-1) (linear) or by the ratio's power i/(n-1) (exponential).
type Ramp struct {
	Strategy         string // "" is no ramp
	StartRPS, EndRPS int
}

// On reports whether a ramp was asked for.
func (r Ramp) On() bool { return r.Strategy != "" }

// rate is the i-th of n requests' rate.
func (r Ramp) rate(i, n int) float64 {
	progress := float64(i) / float64(max(n-1, 1))
	lo, hi := float64(r.StartRPS), float64(r.EndRPS)
	if r.Strategy == RampExponential {
		return lo * math.Pow(hi/lo, progress)
	}
	return lo + (hi-lo)*progress
}

// Check refuses what vllm bench serve refuses of a ramp, and a first rate of 0 (vLLM's own
// check on each request's rate fails there).
func (r Ramp) Check() error {
	switch {
	case r.Strategy != RampLinear && r.Strategy != RampExponential:
		return fmt.Errorf("--ramp-up-strategy %q: want linear or exponential", r.Strategy)
	case r.StartRPS < 0 || r.EndRPS < 0:
		return fmt.Errorf("ramp-up start and end RPS must be non-negative")
	case r.StartRPS > r.EndRPS:
		return fmt.Errorf("ramp-up start RPS must be less than end RPS")
	case r.StartRPS == 0:
		return fmt.Errorf("--ramp-up-start-rps 0: the first request's rate would be 0; give at least 1")
	}
	return nil
}
