package tui

import "fmt"

// phase is where the dashboard is in a restart or a quit. Only one can be under way.
type phase int

const (
	phaseIdle       phase = iota // nothing under way
	phaseConfirming              // a restart with the pending utilisation awaits enter/y or esc/n
	phaseRestarting              // the server is being restarted; the load is paused
	phaseStopping                // q: the load and the server are stopping (after a restart under way)
	phaseForced                  // a second q or ctrl+c: the server group was killed, quitting now
)

func (p phase) String() string {
	switch p {
	case phaseIdle:
		return "idle"
	case phaseConfirming:
		return "confirming"
	case phaseRestarting:
		return "restarting"
	case phaseStopping:
		return "stopping"
	case phaseForced:
		return "forced"
	}
	return fmt.Sprintf("phase(%d)", int(p))
}
