package tui

import (
	"errors"
	tea "github.com/charmbracelet/bubbletea"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

type fakeCanary struct {
	mu   sync.Mutex
	on   bool
	last *loadgen.CanarySample
}

func (f *fakeCanary) SetOn(on bool)           { f.mu.Lock(); f.on = on; f.mu.Unlock() }
func (f *fakeCanary) On() bool                { f.mu.Lock(); defer f.mu.Unlock(); return f.on }
func (f *fakeCanary) Interval() time.Duration { return 5 * time.Second }
func (f *fakeCanary) Last() (loadgen.CanarySample, bool) {
	if f.last == nil {
		return loadgen.CanarySample{}, false
	}
	return *f.last, true
}
func (f *fakeCanary) Counts() loadgen.CanaryCounts { return loadgen.CanaryCounts{} }

type fakeRecorder struct {
	verdicts []diagnose.Verdict
	err      error
}

func (f *fakeRecorder) Record(vs []diagnose.Verdict) (string, error) {
	f.verdicts = vs
	return "/var/tmp/vllmtop-bundle-x.tar.gz", f.err
}

func TestCanaryKeyAndItsOwnFigures(t *testing.T) {
	cn := &fakeCanary{}
	d := newDriver(t, 80, 24, func(dp *Deps) { dp.Mode, dp.Canary = ModeAttach, cn })
	assert.NotContains(t, d.view(), "canary", "off by default")
	d.press("C")
	assert.True(t, cn.On())
	d.second()
	assert.Contains(t, d.view(), "canary waiting")
	cn.last = &loadgen.CanarySample{TTFT: 42 * time.Millisecond, TPOT: 9 * time.Millisecond, OutputTokens: 16}
	d.second()
	out := d.view()
	assert.Contains(t, out, "HEALTHY · canary 42ms/9.0ms", "at 80 columns the verdict first, the canary short")
	d.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	assert.Contains(t, d.view(), "HEALTHY · canary TTFT 42ms TPOT 9.0ms", "in words where they fit")
	d.press("C")
	assert.False(t, cn.On())

	d = newDriver(t, 80, 24)
	d.press("C")
	assert.Contains(t, d.m.c.s.status, "attach mode")
}

func TestRecordKeyWritesOffTheUIGoroutine(t *testing.T) {
	rec := &fakeRecorder{}
	d := newDriver(t, 120, 40, func(dp *Deps) { dp.Recorder = rec })
	d.second()
	cmd := d.press("B")
	require.NotNil(t, cmd, "the bundle is written in a command")
	assert.Nil(t, rec.verdicts, "not yet: Update does not write")
	d.send(cmd())
	assert.Contains(t, d.view(), "bundle written: /var/tmp/vllmtop-bundle-x.tar.gz")
	rec.err = errors.New("flight recorder: disk full")
	d.send(d.press("B")())
	assert.True(t, d.m.c.s.statusBad)
	assert.Contains(t, d.m.c.s.status, "disk full")
}

// A DEGRADED verdict keeps its place in the header beside the canary: the canary gives way.
func TestCanaryNeverHidesADegradedVerdict(t *testing.T) {
	for _, w := range []int{80, 100, 200} {
		cn := &fakeCanary{}
		d := newDriver(t, w, 24, func(dp *Deps) { dp.Mode, dp.Canary = ModeAttach, cn })
		for range 5 {
			d.requests(3, 40*time.Millisecond)
			d.second()
		}
		d.press("C")
		cn.last = &loadgen.CanarySample{TTFT: 42 * time.Millisecond, TPOT: 9 * time.Millisecond, OutputTokens: 16}
		q := kvVerdict
		q.Rule = "queue-bound"
		d.second()
		d.m.c.s.verdicts = []diagnose.Verdict{kvVerdict, q}
		d.m.header.Update(refreshMsg{})
		head := strings.Split(d.view(), "\n")[1]
		assert.Contains(t, head, "DEGRADED", "%d columns: %q", w, head)
		if w == 200 {
			assert.Contains(t, head, "canary", "room for both")
		}
	}
}
