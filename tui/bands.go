package tui

import (
	"math"
	"slices"
)

// A chart may split its series into two bands stacked over one time axis, each with its own Y
// scale: prompt tokens (thousands a second while prefilling) would flatten generated ones (a
// few hundred) onto zero on a shared axis.

// minLowerBand is the fewest plot rows the lower band takes; minUpperBand the fewest left
// above it. A plot with fewer rows than both draws only the upper band.
const (
	minLowerBand = 2
	minUpperBand = 3
)

// bandRows splits a plot's rows: the lower band a third (at least minLowerBand), none when the
// chart has no lower series or too few rows for two bands.
func bandRows(def chartDef, rows int) (upper, lower int) {
	if len(def.lower) == 0 || rows < minLowerBand+minUpperBand {
		return rows, 0
	}
	lower = max(rows/3, minLowerBand)
	return rows - lower, lower
}

// bandSeries are the chart's series ids of one band, with their legend styles.
func bandSeries(def chartDef, lower bool) (ids, styles []int) {
	for i, id := range def.series {
		if slices.Contains(def.lower, id) == lower {
			ids, styles = append(ids, id), append(styles, i)
		}
	}
	return ids, styles
}

// bandScale is the Y range of a band's series over the window, at most rows tall. Bounds do
// not count: they never move the axis.
func (o *overview) bandScale(def chartDef, lower bool, win timeWindow, width, rows int) yScale {
	if def.fixedTop > 0 {
		return niceScale(def.fixedTop, maxIntervals(rows))
	}
	ids, _ := bandSeries(def, lower)
	maxV := 0.0
	for _, id := range ids {
		maxV = math.Max(maxV, valueMax(o.c.s.hist.bins(id, win, subCols(&o.c.styles, max(width, 1)))))
	}
	if maxV <= 0 {
		return niceScale(1, 1) // no data: 0 and 1 say so, finer ticks would pretend
	}
	return niceScale(maxV, maxIntervals(rows))
}

// chartPlot is a chart's plot lines: one plot, or two bands over the lower band's time axis,
// each band named on its top row.
func (o *overview) chartPlot(def chartDef, p plotSpec, upper, lower yScale) []string {
	upRows, loRows := bandRows(def, p.Rows)
	series := func(lower bool) []plotSeries {
		ids, styles := bandSeries(def, lower)
		out := make([]plotSeries, len(ids))
		for j, id := range ids {
			out[j] = plotSeries{Style: styles[j], Bins: o.c.s.hist.bins(id, p.W, subCols(&o.c.styles, p.Cols))}
		}
		return out
	}
	top := p
	top.Rows, top.Scale, top.Series = upRows, upper, series(false)
	if loRows == 0 {
		return renderPlot(&o.c.styles, top)
	}
	top.Name = def.upperName
	lines := renderPlot(&o.c.styles, top)
	lines = lines[:len(lines)-1] // the lower band's time axis is the chart's
	bottom := p
	bottom.Rows, bottom.Scale, bottom.Series, bottom.Name = loRows, lower, series(true), def.lowerName
	return append(lines, renderPlot(&o.c.styles, bottom)...)
}
