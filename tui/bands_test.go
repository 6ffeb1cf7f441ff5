package tui

import (
	"math"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// feedThroughput replaces the history with a minute of generation near 400 tok/s and prompt
// tokens near 8.1k tok/s, as a long-prompt load shows them.
func feedThroughput(d *driver) {
	s := &d.m.c.s
	s.hist = newHistory(seriesAggregates())
	now := d.m.c.now()
	for i := 60; i >= 0; i-- {
		row := make([]sample, len(seriesDefs))
		for j := range row {
			row[j] = sample{V: math.NaN(), Kind: noSample}
		}
		row[serSrvGenTok], row[serClientTok] = value(400+float64(i%7)), value(390)
		row[serSrvPromptTok] = value(8100)
		s.hist.push(now.Add(-time.Duration(i)*time.Second), row)
		s.last = row
	}
}

// Prompt and generated tokens are drawn in two bands, each on its own scale: the 8.1k prompt
// tokens a second do not flatten the 400 generated ones onto zero.
func TestThroughputDrawsPromptTokensOnTheirOwnScale(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		d := newDriver(t, sz[0], sz[1], func(dp *Deps) { dp.NoColor = true })
		d.second()
		feedThroughput(d)
		d.showView(overviewTab)
		d.second()
		feedThroughput(d)
		panelOf[*overview](d).draw()
		out := ansi.Strip(d.view())
		require.Contains(t, out, "srv prompt 8.1k", "%v", sz)
		assert.Contains(t, out, "generated", "%v: the upper band is named", sz)
		assert.Contains(t, out, "prompt", "%v: the lower band is named", sz)
		// The Y labels: the generated band tops out near 400 tok/s, the prompt band near 8.1k.
		labels := regexp.MustCompile(`(\d+(?:\.\d+)?)(k?) tok/s┤`).FindAllStringSubmatch(out, -1)
		genTop, promptTop := 0.0, 0.0
		for _, l := range labels {
			v, _ := strconv.ParseFloat(l[1], 64)
			if l[2] == "k" {
				promptTop = max(promptTop, v*1000)
			} else {
				genTop = max(genTop, v)
			}
		}
		assert.True(t, genTop >= 400 && genTop <= 600, "%v: the generated band's own scale, top %v", sz, genTop)
		assert.True(t, promptTop >= 8000 && promptTop <= 10000, "%v: the prompt band's own scale, top %v", sz, promptTop)
		assert.LessOrEqual(t, maxLineWidth(d.view()), sz[0])
	}
}
