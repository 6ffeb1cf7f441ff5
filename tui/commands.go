package tui

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/vllmtop/vllmtop/server"
)

const uiInterval = 250 * time.Millisecond // 4 Hz: header and numbers; charts move at 1 Hz

func uiTick(gen int) tea.Cmd {
	return tea.Tick(uiInterval, func(t time.Time) tea.Msg { return uiTickMsg{gen: gen, at: t} })
}

func scheduleScrape(gen int, d time.Duration) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return scrapeTickMsg{gen: gen} })
}

// scrapeCmd reads /metrics once; the next scrape is scheduled after its result, so a slow
// server never gets overlapping scrapes.
func scrapeCmd(s Scraper, timeout time.Duration) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		snap, err := s.Scrape(ctx)
		return scrapeResultMsg{snap: snap, err: err}
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
