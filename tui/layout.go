package tui

// rect is a region of the terminal, in cells, from its top-left corner.
type rect struct{ X, Y, W, H int }

// screen is where each part of the dashboard goes.
type screen struct {
	TooSmall                   bool // below minWidth x minHeight: only a notice is shown
	Header, Tabs, Body, Footer rect
}

// The dashboard's fixed parts and its smallest usable size.
const (
	headerLines = 2
	tabLines    = 1
	footerLines = 1
	minWidth    = 60
	minHeight   = 16
)

// layout divides a terminal of width x height: the header on top, the tab line, the active
// panel's body, the footer at the bottom. It is pure, so it is tested as a table.
func layout(width, height int) screen {
	if width < minWidth || height < minHeight {
		return screen{TooSmall: true}
	}
	s := screen{
		Header: rect{0, 0, width, headerLines},
		Tabs:   rect{0, headerLines, width, tabLines},
		Footer: rect{0, height - footerLines, width, footerLines},
	}
	top := headerLines + tabLines
	s.Body = rect{0, top, width, height - top - footerLines}
	return s
}

// grid divides body into rows x cols cells of equal size with a one-column gutter between
// columns. Every cell gets the same width, so charts side by side and above each other have
// their plot columns at the same places: a spare column or row is left at the right or bottom.
func grid(body rect, rows, cols int) []rect {
	if rows <= 0 || cols <= 0 {
		return nil
	}
	w := max((body.W-(cols-1))/cols, 0)
	h := max(body.H/rows, 0)
	out := make([]rect, 0, rows*cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			out = append(out, rect{X: body.X + c*(w+1), Y: body.Y + r*h, W: w, H: h})
		}
	}
	return out
}
