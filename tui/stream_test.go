package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/themes"
)

func streamDriver(t *testing.T) (*driver, *stream) {
	d := newDriver(t, 120, 40)
	for i := 0; i < 3; i++ {
		d.second() // two scrapes and more: the server's prefill rate is known
	}
	d.showView(streamTab)
	return d, panelOf[*stream](d)
}

func TestStreamExplainsAnITLRaisedByOtherPrefills(t *testing.T) {
	d, p := streamDriver(t)
	now := *d.td.clock
	p.slots[0] = watchSlot{cur: watchedRequest(now, 256, 60, 30*time.Millisecond, 9*time.Millisecond, false, true)}
	p.slots[1] = watchSlot{cur: watchedRequest(now, 4096, 60, 300*time.Millisecond, 9*time.Millisecond, true, false)}
	d.second()
	out := d.view()
	require.Contains(t, out, "short prompt 256→60 tok")
	require.Contains(t, out, "long prompt 4096→60 tok")
	assert.Equal(t, 1, strings.Count(out, "▲ ITL"), "only the interfered request gets the note")
	var right []string // the long-prompt pane: what follows the divider on each line
	for _, l := range strings.Split(out, "\n") {
		if _, r, ok := strings.Cut(l, "│"); ok {
			right = append(right, r)
		}
	}
	note := strings.Join(strings.Fields(strings.Join(right, " ")), " ")
	assert.Contains(t, note, "other requests' prefills share the engine's steps (the server prefills 768 prompt tok/s, 67% of its tokens)")
	assert.Contains(t, out, "TTFT   300ms")
	assert.Contains(t, out, "TTFT   30ms")
	assert.Contains(t, out, "queue 4.0ms ▓ prefill 21ms (server means)", "the server's queueing when the first token came")
	assert.LessOrEqual(t, maxLineWidth(out), 120)
}

func TestStreamComparesTheLongDecodeWithTheShortOne(t *testing.T) {
	d, p := streamDriver(t)
	now := *d.td.clock
	// Both decode evenly, the long one at twice the short one's step.
	p.slots[0] = watchSlot{cur: watchedRequest(now, 256, 60, 30*time.Millisecond, 9*time.Millisecond, false, true)}
	p.slots[1] = watchSlot{cur: watchedRequest(now, 4096, 60, 300*time.Millisecond, 18*time.Millisecond, false, false)}
	d.second()
	out := strings.Join(strings.Fields(d.view()), " ")
	assert.Contains(t, out, "▲ ITL 18ms, 2.0x the short prompt's (9.0ms)")
}

func TestStreamTextIsSanitisedLineByLine(t *testing.T) {
	d, p := streamDriver(t)
	now := *d.td.clock
	toks := []loadgen.WatchedToken{{Text: "first\x1b]0;pwned\x07 line", At: now}, {Text: "\nsecond\x1b[2J line", At: now.Add(9 * time.Millisecond)}}
	p.slots[0] = watchSlot{cur: &scriptedWatch{v: loadgen.WatchedView{Started: now.Add(-30 * time.Millisecond), Tokens: toks}}}
	d.second()
	out := d.view()
	assert.NotContains(t, out, "pwned")
	assert.NotContains(t, out, "\x1b[2J")
	lines := strings.Split(out, "\n")
	var first, second int
	for i, l := range lines {
		if strings.Contains(l, "first line") {
			first = i
		}
		if strings.Contains(l, "second line") {
			second = i
		}
	}
	require.NotZero(t, first)
	assert.Equal(t, first+1, second, "the streamed newline survives")
}

func TestStreamWatchesTheCurrentWorkloadAndKeepsTheOther(t *testing.T) {
	d, p := streamDriver(t)
	require.Len(t, d.td.load.watches, 1)
	require.NotNil(t, p.slots[0].next, "waiting for a short-prompt request")
	d.press("p")
	require.Len(t, d.td.load.watches, 2)
	assert.NotNil(t, p.slots[1].next, "then for a long-prompt one")
	assert.NotNil(t, p.slots[0].next, "the short one is still awaited: nothing started")
}

func TestTokenTextWrapsAtWords(t *testing.T) {
	dark, _ := themes.ByName("dark")
	th := NewStyles(dark, false)
	now := t0
	var toks []loadgen.WatchedToken
	for _, w := range []string{"alpha", " beta", " gamma", " delta", " epsilon"} {
		toks = append(toks, loadgen.WatchedToken{Text: w, At: now})
	}
	lines := tokenText(&th, toks, 12, 5)
	assert.Equal(t, []string{"alpha beta", "gamma delta", "epsilon"}, lines)
	assert.Len(t, tokenText(&th, toks, 12, 2), 2, "only the last lines that fit")
	assert.Empty(t, tokenText(&th, nil, 12, 2))
}

// The server's means are of every request around the watched one: a short prompt among long
// ones has a TTFT below them, and its bar is not split by figures that are not its own.
func TestStreamDoesNotSplitATTFTByMeansThatAreNotItsOwn(t *testing.T) {
	d, p := streamDriver(t)
	now := *d.td.clock
	p.slots[0] = watchSlot{cur: watchedRequest(now, 256, 60, 39*time.Millisecond, 9*time.Millisecond, false, true)}
	d.second()
	p.slots[0].queue, p.slots[0].prefill = 90*time.Millisecond, 200*time.Millisecond // as noted at its first token
	d.second()
	out := d.view()
	var ttft string
	var lefts []string
	for _, l := range strings.Split(out, "\n") {
		left, _, _ := strings.Cut(l, "│")
		lefts = append(lefts, left)
		if strings.Contains(left, "TTFT   39ms") {
			ttft = left
		}
	}
	require.NotEmpty(t, ttft)
	assert.NotContains(t, ttft, "░", "no queue share in the bar")
	assert.Contains(t, strings.Join(strings.Fields(strings.Join(lefts, " ")), " "), "server means of all requests: queue 90ms, prefill 200ms")
}

// Tokens read together (one chunk after a late read) have near-zero gaps; they are not engine
// steps, and the note's reference is not made of them.
func TestStreamFastestStepsIgnoreTokensReadTogether(t *testing.T) {
	d, p := streamDriver(t)
	now := *d.td.clock
	w := watchedRequest(now, 256, 60, 30*time.Millisecond, 9*time.Millisecond, true, true)
	for i := 20; i < 30; i++ { // ten tokens that arrived 3µs apart
		w.v.Tokens[i].At = w.v.Tokens[19].At.Add(time.Duration(i-19) * 3 * time.Microsecond)
	}
	p.slots[0] = watchSlot{cur: w}
	d.second()
	out := strings.Join(strings.Fields(d.view()), " ")
	assert.NotContains(t, out, "µs):", "no microsecond reference")
	assert.Contains(t, out, "its fastest steps (9.0ms)")
}

func TestStreamSaysARequestWithoutTokensIsWaiting(t *testing.T) {
	d, p := streamDriver(t)
	now := *d.td.clock
	p.slots[0] = watchSlot{cur: watchedRequest(now, 256, 60, 30*time.Millisecond, 9*time.Millisecond, false, true)}
	p.slots[1] = watchSlot{cur: watchedRequest(now, 4096, 0, 0, 0, false, false)}
	d.second()
	out := d.view()
	assert.Contains(t, out, "long prompt 4096 tok in · waiting for the first token")
	assert.NotContains(t, out, "4096→0", "a request in prefill has not produced nothing")
	assert.Contains(t, out, "short prompt 256→60 tok")
	// Its TTFT bar is its wait so far (a second of the fake clock), not 0.
	assert.Contains(t, out, "TTFT   ≥1.0s   ▓")
	assert.Contains(t, strings.Join(strings.Fields(out), " "), "queued or in prefill so far")
	assert.NotContains(t, out, "does not report its queueing")
}

// The watch key's note lasts until the request it watches begins, not for good.
func TestWatchNoteEndsWhenTheRequestBegins(t *testing.T) {
	d, p := streamDriver(t)
	d.m.c.setStatus(watchingNext, false)
	now := *d.td.clock
	p.slots[0] = watchSlot{next: &scriptedWatch{}}
	d.second()
	assert.Equal(t, watchingNext, d.m.c.s.status, "not begun yet")
	p.slots[0].next = &scriptedWatch{v: loadgen.WatchedView{Started: now}}
	d.second()
	assert.Empty(t, d.m.c.s.status)
}
