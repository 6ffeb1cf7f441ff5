package tui

import (
	"time"

	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/server"
)

// uiTickMsg drives refreshes (4 Hz; charts move once a second); gen tells a live tick chain
// from a stale one.
type uiTickMsg struct {
	gen int
	at  time.Time
}

type scrapeTickMsg struct{ gen int }

// scrapeResultMsg is a finished scrape, parsed and compared off the UI goroutine: fast is the
// window since the previous scrape (rates), slow the window since the scrape a live window
// ago (quantiles over as many seconds as the client's).
type scrapeResultMsg struct {
	snap       *scrape.Snapshot
	fast, slow *scrape.Window
	err        error
}

// serverEventsMsg carries every event waiting on the supervisor's channel, so a burst of log
// batches costs one render.
type serverEventsMsg struct {
	events []server.Event
	closed bool
}

type restartDoneMsg struct {
	util float64
	err  error
}

type stopDoneMsg struct{ err error }

// Messages the root sends its panels.
type (
	// refreshMsg asks the active panel to redraw its cache from the shared state; second is
	// set once a second, when the charts and the runs moved.
	refreshMsg struct{ second bool }
	// logLinesMsg hands every panel the server's new log lines (the Log panel keeps them).
	logLinesMsg struct {
		lines   []server.Line
		dropped uint64
	}
	// restyleMsg says the styles changed (a theme switch): caches must be drawn again.
	restyleMsg struct{}
	// workloadMsg says the load switched workloads (long: the long-prompt one).
	workloadMsg struct{ long bool }
)
