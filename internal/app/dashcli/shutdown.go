package dashcli

import (
	"context"

	tea "github.com/charmbracelet/bubbletea"
)

// programOptions are the UI's: the alternate screen, and an end when ctx ends. The command's
// context is the only signal handler: it ends on SIGINT, SIGTERM or SIGHUP, the UI returns and
// the dashboard stops the load and the server. Bubble Tea's own handler is left out: it sends
// its QuitMsg on an unbuffered channel without watching the context, so when the context ended
// first its goroutine blocked for ever, and Run, waiting for it, never returned (nor did later
// signals reach anyone: that goroutine still held them).
func programOptions(ctx context.Context) []tea.ProgramOption {
	return []tea.ProgramOption{tea.WithAltScreen(), tea.WithContext(ctx), tea.WithoutSignalHandler()}
}
