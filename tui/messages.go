package tui

import (
	"time"

	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/server"
)

// uiTickMsg drives refreshes; gen tells a live tick chain from a stale one.
type uiTickMsg struct {
	gen int
	at  time.Time
}

type scrapeTickMsg struct{ gen int }

type scrapeResultMsg struct {
	snap scrape.Snapshot
	err  error
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
