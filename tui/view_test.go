package tui

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server"
)

// scripted builds a dashboard and feeds it a fixed sequence: a size, log lines, two scrapes,
// 30 seconds of results with a load change at 15 s, a watched request and a picked pair of
// runs. Everything is on a fake clock, so views are the same on every run.
func scripted(t *testing.T, w, h int, theme string) Model {
	t.Helper()
	td := newTestDeps(t)
	clock := t0
	td.deps.Now = func() time.Time { return clock }
	td.deps.Theme = theme
	metrics, err := os.ReadFile("../testdata/vllm-metrics-synthetic-single-process.txt")
	require.NoError(t, err)
	td.deps.Scraper = fakeScraper{string(metrics)}
	m := New(td.deps)
	step := func(msg tea.Msg) {
		next, _ := m.Update(msg)
		m = next.(Model)
	}
	step(tea.WindowSizeMsg{Width: w, Height: h})
	lines := []string{
		"(EngineCore pid=4310) INFO 11-30 12:00:01 [model_runner.py:309] Model loading took 14.99 GiB and 3.002100 seconds",
		"(EngineCore pid=4310) INFO 11-30 12:00:02 [kv_cache_utils.py:2214] GPU KV cache size: 464,720 tokens",
		"(EngineCore pid=4310) INFO 11-30 12:00:02 [kv_cache_utils.py:2215] Maximum concurrency for 131,072 tokens per request: 3.55x",
		"(APIServer pid=4127) WARNING 11-30 12:00:03 [api_server.py:12] a warning line",
		"(APIServer pid=4127) INFO:     127.0.0.1:51240 - \"POST /v1/completions HTTP/1.1\" 200 OK",
	}
	var batch server.LogBatch
	for i, l := range lines {
		batch.Lines = append(batch.Lines, server.Line{Seq: uint64(i + 1), Run: 1, Time: t0, Raw: l, Text: l})
	}
	step(serverEventsMsg{events: []server.Event{batch}})
	snap, err := td.deps.Scraper.Scrape(context.Background())
	require.NoError(t, err)
	step(scrapeResultMsg{snap: snap})
	step(scrapeResultMsg{snap: snap})
	for sec := 1; sec <= 30; sec++ {
		for i := 0; i < 5; i++ {
			td.load.live.Add(loadgen.Result{Epoch: td.load.epoch, Start: clock, TTFT: time.Duration(40+sec+i*3) * time.Millisecond,
				E2EL: 1200 * time.Millisecond, OutputTokens: 128, PromptTokens: 256, ITLs: []time.Duration{9 * time.Millisecond}})
			td.load.epochs.Add(loadgen.Result{Epoch: td.load.epoch, Start: clock, TTFT: time.Duration(40+sec) * time.Millisecond,
				E2EL: 1200 * time.Millisecond, OutputTokens: 128, PromptTokens: 256})
		}
		for k := 0; k < 4; k++ {
			clock = clock.Add(uiInterval)
			step(uiTickMsg{gen: 0, at: clock})
		}
		if sec == 15 {
			step(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'+'}})
		}
	}
	step(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'w'}})
	watched := loadgen.Watched{}
	for i, tok := range []string{" The", " scheduler", " admits", " waiting", " requests", "."} {
		watched.Token(tok, clock.Add(time.Duration(50+i*9)*time.Millisecond))
	}
	m.watched = &watched
	m.watchView = watched.View(0)
	m.watchView.Started = clock
	m.watchView.Prompt = loadgen.Prompt{InputTokens: 256}
	m.pick(0)
	m.pick(len(m.runs) - 1)
	m.status = ""
	return m
}

func maxLineWidth(s string) int {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, lipgloss.Width(l))
	}
	return w
}

func TestGoldenViews(t *testing.T) {
	sizes := [][2]int{{80, 24}, {120, 40}, {200, 60}}
	for _, theme := range []string{"dark", "light"} {
		for _, sz := range sizes {
			m := scripted(t, sz[0], sz[1], theme)
			for v, name := range viewNames {
				t.Run(fmt.Sprintf("%s/%dx%d/%s", theme, sz[0], sz[1], name), func(t *testing.T) {
					m.setView(v)
					out := m.View()
					assert.LessOrEqual(t, maxLineWidth(out), sz[0], "no line wider than the terminal")
					assert.LessOrEqual(t, strings.Count(out, "\n")+1, sz[1], "no more lines than the terminal")
					golden.RequireEqual(t, []byte(out))
				})
			}
		}
	}
}

func TestHelpOverlayAndTooSmall(t *testing.T) {
	m := scripted(t, 120, 40, "dark")
	next, _ := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'?'}})
	out := next.(Model).View()
	assert.Contains(t, out, "pause/resume load")
	assert.Contains(t, out, "restart with pending util")
	assert.LessOrEqual(t, maxLineWidth(out), 120)
	next, _ = next.(Model).Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	narrow := next.(Model).View()
	for _, k := range []string{"next theme", "quit (twice: force)", "watch a new request", "short/long prompts", "filter log"} {
		assert.Contains(t, narrow, k, "every key is readable at 80 columns")
	}
	assert.LessOrEqual(t, maxLineWidth(narrow), 80)

	for _, sz := range [][2]int{{59, 30}, {100, 15}, {10, 3}, {1, 1}} {
		next, _ := m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		out := next.(Model).View()
		want := fmt.Sprintf("terminal too small: %dx%d (vllmtop needs 60x16)", sz[0], sz[1])
		trimmed := strings.TrimSuffix(out, "…")
		assert.NotEmpty(t, out, "%v", sz)
		assert.True(t, strings.HasPrefix(want, trimmed), "%v: %q", sz, out)
		assert.LessOrEqual(t, maxLineWidth(out), sz[0])
	}
}

func TestMessagesBeforeTheFirstWindowSize(t *testing.T) {
	td := newTestDeps(t)
	m := New(td.deps)
	assert.Equal(t, "vllmtop: starting ...", m.View())
	for _, msg := range []tea.Msg{
		uiTickMsg{at: t0}, uiTickMsg{at: t0}, uiTickMsg{at: t0}, uiTickMsg{at: t0.Add(time.Second)},
		scrapeResultMsg{err: fmt.Errorf("connection refused")},
		serverEventsMsg{events: []server.Event{server.StateChanged{State: server.Ready}}},
		tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'+'}},
		tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'3'}},
	} {
		next, _ := m.Update(msg)
		m = next.(Model)
		assert.NotPanics(t, func() { _ = m.View() })
	}
	next, _ := m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	assert.Contains(t, next.(Model).View(), "metrics: connection refused")
}
