package tui

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/server"
)

const uiInterval = 250 * time.Millisecond // 4 Hz: header and numbers; charts move at 1 Hz

// uiIntervalFor is how often the dashboard ticks: 4 Hz for its own load's numbers, 1 Hz in
// fleet mode, which has no load of its own and whose rows and charts move once a second at
// most (the ticks of a 200-endpoint fleet were a tenth of its CPU).
func uiIntervalFor(d Deps) time.Duration {
	if d.Fleet != nil {
		return time.Second
	}
	return uiInterval
}

func uiTick(gen int, every time.Duration) tea.Cmd {
	return tea.Tick(every, func(t time.Time) tea.Msg { return uiTickMsg{gen: gen, at: t} })
}

func scheduleScrape(gen int, d time.Duration) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return scrapeTickMsg{gen: gen} })
}

// scrapeCmd reads /metrics once and compares it with prev (the last scrape) and old (a live
// window ago), all in the command's goroutine: parsing and comparing a large exposition must not
// hold up keys. The next scrape is scheduled after the result, so a slow server never gets
// overlapping scrapes. Snapshots are never changed once made, so sharing them is safe.
func scrapeCmd(s Scraper, timeout time.Duration, prev, old *scrape.Snapshot) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		snap, err := s.Scrape(ctx)
		if err != nil {
			return scrapeResultMsg{err: err}
		}
		// The families no field took are not needed here, and several snapshots are kept.
		snap.Unmapped = nil
		msg := scrapeResultMsg{snap: &snap}
		if prev != nil {
			w := scrape.Compare(prev, &snap)
			msg.fast = &w
		}
		if old != nil {
			w := scrape.Compare(old, &snap)
			msg.slow = &w
		}
		return msg
	}
}

// waitForServerEvents blocks for one event, then takes whatever else is already queued.
func waitForServerEvents(ch <-chan server.Event) tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-ch
		if !ok {
			return serverEventsMsg{closed: true}
		}
		msg := serverEventsMsg{events: []server.Event{ev}}
		for len(msg.events) < 256 {
			select {
			case ev, ok := <-ch:
				if !ok {
					msg.closed = true
					return msg
				}
				msg.events = append(msg.events, ev)
			default:
				return msg
			}
		}
		return msg
	}
}

func restartCmd(s Supervisor, util float64) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		err := s.Restart(ctx, server.SetGPUMemoryUtilization(util))
		return restartDoneMsg{util: util, err: err}
	}
}

func stopCmd(s Supervisor) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return stopDoneMsg{err: s.Stop(ctx)}
	}
}
