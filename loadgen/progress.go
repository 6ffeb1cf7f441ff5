package loadgen

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// How often Progress redraws its bar on a terminal, and writes a line elsewhere.
const (
	ProgressEvery      = 500 * time.Millisecond
	ProgressPlainEvery = 5 * time.Second
)

// progressBarWidth keeps bar and line inside 80 columns for runs of up to 99,999 requests.
const progressBarWidth = 20

// Progress counts a run's finished requests for a progress line such as
// "requests 120/1000, 3 failed, 512 tok/s, elapsed 12s". Add is safe for concurrent use.
type Progress struct {
	total     int           // requests expected; 0 when the run is bound by time
	duration  time.Duration // the run's time bound, for the bar when total is 0
	done      atomic.Int64
	failed    atomic.Int64
	outTokens atomic.Int64
}

// NewProgress expects total requests (0: a run of the given duration instead).
func NewProgress(total int, duration time.Duration) *Progress {
	return &Progress{total: total, duration: duration}
}

// Add counts one finished request; warm-ups and cancelled requests are not counted.
func (p *Progress) Add(r Result) {
	if r.Warmup || r.Error == ErrCanceled {
		return
	}
	p.done.Add(1)
	if !r.OK() {
		p.failed.Add(1)
		return
	}
	p.outTokens.Add(int64(r.OutputTokens))
}

// Line is the progress as text, elapsed being the wall time since the run began.
func (p *Progress) Line(elapsed time.Duration) string {
	done := p.done.Load()
	var b strings.Builder
	if p.total > 0 {
		fmt.Fprintf(&b, "requests %d/%d", done, p.total)
	} else {
		fmt.Fprintf(&b, "requests %d", done)
	}
	fmt.Fprintf(&b, ", %d failed", p.failed.Load())
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(p.outTokens.Load()) / s
	}
	fmt.Fprintf(&b, ", %.0f tok/s, elapsed %s", rate, elapsed.Truncate(time.Second))
	return b.String()
}

// Bar is Line behind a bar of the fraction done.
func (p *Progress) Bar(elapsed time.Duration) string {
	frac := 0.0
	switch {
	case p.total > 0:
		frac = float64(p.done.Load()) / float64(p.total)
	case p.duration > 0:
		frac = float64(elapsed) / float64(p.duration)
	}
	n := int(min(max(frac, 0), 1) * progressBarWidth)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", progressBarWidth-n) + "] " + p.Line(elapsed)
}

// Start shows the progress on w until the returned stop is called: on a terminal a bar
// redrawn in place every ProgressEvery and erased by stop, elsewhere a line every
// ProgressPlainEvery and a last line at stop. stop blocks until the writer is done with w, so
// what the caller writes next does not interleave; calling it again does nothing.
func (p *Progress) Start(w io.Writer, terminal bool) (stop func()) {
	began := time.Now()
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		every := ProgressPlainEvery
		if terminal {
			every = ProgressEvery
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if terminal {
					fmt.Fprintf(w, "\r%s\x1b[K", p.Bar(time.Since(began)))
				} else {
					fmt.Fprintln(w, p.Line(time.Since(began)))
				}
			case <-quit:
				if terminal {
					fmt.Fprint(w, "\r\x1b[K")
				} else {
					fmt.Fprintln(w, p.Line(time.Since(began)))
				}
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-finished
		})
	}
}
