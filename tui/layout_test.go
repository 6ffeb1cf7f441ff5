package tui

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLayout(t *testing.T) {
	cases := []struct {
		w, h int
		want screen
	}{
		{80, 24, screen{Header: rect{0, 0, 80, 2}, Tabs: rect{0, 2, 80, 1}, Body: rect{0, 3, 80, 20}, Footer: rect{0, 23, 80, 1}}},
		{120, 40, screen{Header: rect{0, 0, 120, 2}, Tabs: rect{0, 2, 120, 1}, Body: rect{0, 3, 120, 36}, Footer: rect{0, 39, 120, 1}}},
		{200, 60, screen{Header: rect{0, 0, 200, 2}, Tabs: rect{0, 2, 200, 1}, Body: rect{0, 3, 200, 56}, Footer: rect{0, 59, 200, 1}}},
		{60, 16, screen{Header: rect{0, 0, 60, 2}, Tabs: rect{0, 2, 60, 1}, Body: rect{0, 3, 60, 12}, Footer: rect{0, 15, 60, 1}}},
		// Sad paths: below the minimum only a notice is shown.
		{59, 40, screen{TooSmall: true}},
		{120, 15, screen{TooSmall: true}},
		{0, 0, screen{TooSmall: true}},
		{-5, 30, screen{TooSmall: true}},
	}
	for _, c := range cases {
		got := layout(c.w, c.h)
		assert.Equal(t, c.want, got, "%dx%d", c.w, c.h)
		if !got.TooSmall {
			assert.Equal(t, c.h, got.Header.H+got.Tabs.H+got.Body.H+got.Footer.H, "%dx%d: every row is used", c.w, c.h)
		}
	}
}

func TestGrid(t *testing.T) {
	cases := []struct {
		body       rect
		rows, cols int
		want       []rect
	}{
		// Equal widths, so the charts' columns line up; the spare column is left at the right.
		{rect{0, 3, 120, 36}, 2, 2, []rect{{0, 3, 59, 18}, {60, 3, 59, 18}, {0, 21, 59, 18}, {60, 21, 59, 18}}},
		{rect{0, 3, 81, 20}, 2, 2, []rect{{0, 3, 40, 10}, {41, 3, 40, 10}, {0, 13, 40, 10}, {41, 13, 40, 10}}},
		{rect{0, 0, 10, 5}, 1, 1, []rect{{0, 0, 10, 5}}},
		{rect{0, 0, 10, 5}, 0, 2, nil},
		{rect{0, 0, 1, 1}, 2, 2, []rect{{0, 0, 0, 0}, {1, 0, 0, 0}, {0, 0, 0, 0}, {1, 0, 0, 0}}},
	}
	for _, c := range cases {
		got := grid(c.body, c.rows, c.cols)
		assert.Equal(t, c.want, got, "%+v %dx%d", c.body, c.rows, c.cols)
		for _, r := range got {
			assert.Equal(t, got[0].W, r.W, "every cell as wide")
		}
	}
}
