package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/vllmtop/vllmtop/loadgen"
)

// replayRefusal is why a replay ignores msg ("" when it does not): a trace or conversations
// send their own prompts, so p and P would only relabel the runs, and a trace's requests come
// at its times, so the concurrency and rate keys (and a search over them) would change nothing.
func replayRefusal(k KeyMap, replay string, msg tea.KeyMsg) string {
	if replay == "" {
		return ""
	}
	if key.Matches(msg, k.PromptLen) || key.Matches(msg, k.Prefix) {
		return "a " + replay + " replay sends its own prompts (p, P: random ones)"
	}
	if replay == loadgen.ReplayTrace {
		if key.Matches(msg, k.Tune.Search) || key.Matches(msg, k.Tune.Sweep) {
			return "a trace sets its own pace: S and W have nothing to search"
		}
		for _, b := range []key.Binding{k.More, k.Less, k.Double, k.Halve, k.RateMode} {
			if key.Matches(msg, b) {
				return "a trace sets its own pace (--trace-speedup, --max-concurrency)"
			}
		}
	}
	return ""
}
