package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func logDriver(t *testing.T) (*driver, *logPanel) {
	d := newDriver(t, 100, 20)
	var lines []string
	for i := 0; i < 50; i++ {
		lines = append(lines, fmt.Sprintf("INFO line %02d", i))
		lines = append(lines, fmt.Sprintf(`INFO:     127.0.0.1:5%d - "GET /metrics HTTP/1.1" 200 OK`, i))
	}
	lines = append(lines, "ERROR boom "+strings.Repeat("x", 150)+" END")
	d.logs(lines...)
	d.showView(logTab)
	d.second()
	return d, panelOf[*logPanel](d)
}

func TestLogHidesPollingAndSaysHowMany(t *testing.T) {
	d, p := logDriver(t)
	out := d.view()
	assert.Contains(t, out, "50 polling lines hidden (a shows)")
	assert.NotContains(t, out, "GET /metrics")
	d.press("a")
	assert.Contains(t, d.view(), "GET /metrics")
	assert.Contains(t, d.view(), "vllmtop's polling shown (a hides)")
	assert.Len(t, p.visible, 101)
}

func TestLogScrollsPagesAndEnds(t *testing.T) {
	d, p := logDriver(t)
	assert.True(t, p.follow)
	assert.Contains(t, d.view(), "ERROR boom")
	d.press("g")
	assert.False(t, p.follow)
	assert.Contains(t, d.view(), "INFO line 00")
	d.press("pgdown")
	assert.Equal(t, p.rows()-1, p.top, "a page down moves by a screen less a line")
	d.press("pgup", "pgup")
	assert.Zero(t, p.top)
	d.press("j", "j")
	assert.Equal(t, 2, p.top)
	d.press("k")
	assert.Equal(t, 1, p.top)
	d.press("end")
	assert.True(t, p.follow, "the end follows again")
	d.press("home")
	assert.Zero(t, p.top)
	d.press("G")
	assert.True(t, p.follow)
}

func TestLogWrapsOrScrollsSideways(t *testing.T) {
	d, _ := logDriver(t)
	out := d.view()
	assert.NotContains(t, out, "END", "a long line is cut")
	assert.Contains(t, out, "…")
	d.press("l", "l", "l", "l", "l", "l")
	assert.Contains(t, d.view(), "END", "scrolled right, its end shows")
	d.press("h", "h", "h", "h", "h", "h")
	d.press("w")
	out = d.view()
	assert.Contains(t, out, "END", "wrapped, all of it shows")
	assert.Contains(t, out, "wrapped (w)")
	assert.LessOrEqual(t, maxLineWidth(out), 100)
}

func TestLogFilterAndEscClearsIt(t *testing.T) {
	d, p := logDriver(t)
	d.press("/")
	require.True(t, p.filtering)
	d.press("q") // typed into the filter: it does not quit
	assert.Equal(t, phaseIdle, d.m.c.s.phase)
	d.press("esc")
	assert.False(t, p.filtering)
	assert.Empty(t, p.filter.Value())
	d.press("/", "b", "o", "o", "m", "enter")
	assert.False(t, p.filtering)
	assert.Equal(t, "boom", p.filter.Value())
	out := d.view()
	assert.Contains(t, out, "ERROR boom")
	assert.NotContains(t, out, "INFO line")
	assert.Contains(t, out, "filter: boom (esc clears)")
	d.press("esc")
	assert.Empty(t, p.filter.Value(), "esc clears an applied filter")
	assert.Contains(t, d.view(), "INFO line 49")
}

func TestLogKeepsABoundedNumberOfLines(t *testing.T) {
	d, p := logDriver(t)
	for i := 0; i < 3; i++ {
		batch := make([]string, 2500)
		for j := range batch {
			batch[j] = fmt.Sprintf("INFO bulk %d-%d", i, j)
		}
		d.logs(batch...)
	}
	assert.LessOrEqual(t, len(p.lines), maxLogLines+maxLogLines/10)
	assert.Zero(t, p.pollingN, "the polling lines dropped with the old lines")
	assert.NotContains(t, d.view(), "INFO bulk 2-2499", "new lines are drawn at the next tick, not per batch")
	d.second()
	assert.Contains(t, d.view(), "INFO bulk 2-2499")
}

// A cut access-log line keeps its status code: the request loses its middle instead.
func TestCutAccessLineKeepsItsStatus(t *testing.T) {
	line := `(APIServer pid=1) INFO:     127.0.0.1:52834 - "POST /v1/chat/completions HTTP/1.1" 200 OK`
	got := cutKeepingStatus(line, 60)
	assert.Equal(t, 60, lipgloss.Width(got))
	assert.True(t, strings.HasSuffix(got, `…" 200 OK`), got)
	plain := strings.Repeat("x", 100)
	assert.Equal(t, strings.Repeat("x", 59)+"…", cutKeepingStatus(plain, 60))
	assert.Equal(t, 20, lipgloss.Width(cutKeepingStatus(line, 20)), "too narrow for the status: a plain cut")
}
