package serve_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// The KV figure a case is judged on is what is left of the memory budget after weights,
// activations, non-torch memory and (from 0.21) CUDA graphs; two errors can cancel in it. Where
// a log gives those parts too, this compares each with the simulator's plan, so that a right
// total from wrong parts shows. It reports and does not fail: the KV figure is the target.

// loggedParts are the memory components a start-up log gives, in GiB (nil: not logged).
type loggedParts struct {
	Weights    *float64 `json:"weights_gib"`
	Activation *float64 `json:"activation_gib"`
	NonTorch   *float64 `json:"non_torch_gib"`
	CUDAGraph  *float64 `json:"cuda_graph_gib"`
}

// componentNames name the parts in list order.
var componentNames = []string{"weights", "activation", "non-torch", "CUDA graphs"}

func (p *loggedParts) list() []*float64 {
	return []*float64{p.Weights, p.Activation, p.NonTorch, p.CUDAGraph}
}

// componentTolerance is how far a part may be off and still count as right: 5% of the logged
// figure, or 0.05 GiB for the small parts whose logged figures have two decimals.
func componentTolerance(logged float64) float64 { return math.Max(0.05*logged, 0.05) }

// predictedParts is the simulator's plan for the case's settings, in GiB (nil when it has
// none: the case is not expressible, or a refused start has no CUDA graphs to capture). The
// CUDA-graph part is the pool the simulated log reports after capture (an eager run logs none,
// so its case has no figure to compare).
func predictedParts(args []string) []*float64 {
	gib := func(b int64) *float64 { v := float64(b) / (1 << 30); return &v }
	p, err := serve.Prepare(args, func(string) string { return "" })
	if err != nil {
		if se, ok := err.(*serve.StartupError); ok {
			c := se.Capacity
			return []*float64{gib(c.WeightsBytes), gib(c.ActivationBytes), gib(c.NonTorchBytes), nil}
		}
		return nil
	}
	s := p.Setup()
	c := s.Capacity
	graphs := c.CUDAGraphBytes
	if graphs == 0 {
		graphs = sim.CUDAGraphEstimateBytes(s)
	}
	return []*float64{gib(c.WeightsBytes), gib(c.ActivationBytes), gib(c.NonTorchBytes), gib(graphs)}
}

// componentError is one part of one case: logged and predicted GiB.
type componentError struct {
	id                string
	logged, predicted float64
}

func TestValidationComponents(t *testing.T) {
	raw, err := os.ReadFile(corpusPath)
	require.NoError(t, err)
	var cor corpus
	require.NoError(t, json.Unmarshal(raw, &cor))
	var parts struct {
		Cases []struct {
			Logged loggedParts `json:"logged"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &parts))
	profiles, err := sim.LoadProfiles("")
	require.NoError(t, err)
	bySet := map[string][][]componentError{"fit": make([][]componentError, 4), "heldout": make([][]componentError, 4)}
	for i, c := range cor.Cases {
		args, _ := simArgs(c, profiles)
		if args == nil || c.Exclude != "" {
			continue
		}
		got := predictedParts(args)
		if got == nil {
			continue
		}
		for k, l := range parts.Cases[i].Logged.list() {
			if l != nil && got[k] != nil {
				bySet[c.Set][k] = append(bySet[c.Set][k], componentError{c.ID, *l, *got[k]})
			}
		}
	}
	out := componentSummary(bySet)
	t.Log(out)
	if path := os.Getenv("VLLMTOP_VALIDATION_COMPONENTS_OUT"); path != "" {
		require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
	}
	require.NotEmpty(t, bySet["heldout"][0], "held-out logs give their weights")
	assertInValidationDoc(t, out, "VLLMTOP_VALIDATION_COMPONENTS_OUT")
}

// assertInValidationDoc fails when docs/validation.md no longer holds what a validation test
// prints, so the page says what the code does; env names the variable that writes it out.
func assertInValidationDoc(t *testing.T, generated, env string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs/validation.md"))
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(doc), strings.TrimSpace(generated)),
		"docs/validation.md is stale: write the figures with %s=FILE and put them in the page", env)
}

// componentSummary is one line a set and part: how many cases have the part logged, how many
// are within componentTolerance, the median absolute error, and the three worst.
func componentSummary(bySet map[string][][]componentError) string {
	var b strings.Builder
	for _, set := range []string{"fit", "heldout"} {
		for k, errs := range bySet[set] {
			if len(errs) == 0 {
				continue
			}
			sort.Slice(errs, func(i, j int) bool {
				return math.Abs(errs[i].predicted-errs[i].logged) > math.Abs(errs[j].predicted-errs[j].logged)
			})
			within, abs := 0, make([]float64, len(errs))
			for i, e := range errs {
				abs[i] = math.Abs(e.predicted - e.logged)
				if abs[i] <= componentTolerance(e.logged) {
					within++
				}
			}
			sort.Float64s(abs)
			var worst []string
			for _, e := range errs[:min(3, len(errs))] {
				worst = append(worst, fmt.Sprintf("`%s` %.2f / %.2f", e.id, e.logged, e.predicted))
			}
			fmt.Fprintf(&b, "- %s %s: %d of %d within 5%% or 0.05 GiB, median |error| %.2f GiB; largest: %s\n",
				set, componentNames[k], within, len(errs), abs[len(abs)/2], strings.Join(worst, ", "))
		}
	}
	return b.String()
}
