package loadgen

import (
	"context"
	"io"
	"time"
)

// replayFrom sets the runner to replay the session's dataset (a trace, looped, or
// conversations with no end unless counted) once the server's tokenizer is known. It reports
// whether the dataset replays; false leaves the workloads in charge.
func (s *Session) replayFrom(ctx context.Context) (bool, error) {
	d := s.cfg.Dataset
	if d == nil {
		return false, nil
	}
	trace, conv, _, err := d.Replay(ctx, s.client)
	switch {
	case err != nil:
		return false, err
	case trace != nil:
		s.runner.cfg.Arrivals = &loopedTrace{open: trace, gap: time.Second}
	case conv != nil:
		conv.Count = d.cfg.MultiTurn.Count // the dashboard plays on until told otherwise
		s.runner.cfg.Conversations = conv
	default:
		return false, nil
	}
	return true, nil
}

// loopedTrace replays a trace again and again, each pass gap after the last arrival of the one
// before, with indexes that go on counting. A session's first turn in a pass is timed, so its
// later turns follow that pass's turns, not the last pass's.
type loopedTrace struct {
	open       func() (ArrivalSource, error)
	cur        ArrivalSource
	gap        time.Duration
	base, last time.Duration
	index      int
	passEmpty  bool
}

func (l *loopedTrace) Next() (Arrival, error) {
	for {
		if l.cur == nil {
			src, err := l.open()
			if err != nil {
				return Arrival{}, err
			}
			l.cur, l.passEmpty = src, true
		}
		a, err := l.cur.Next()
		if err == io.EOF {
			if l.passEmpty {
				return Arrival{}, io.EOF // nothing to replay: do not spin
			}
			l.cur, l.base = nil, l.last+l.gap
			continue
		}
		if err != nil {
			return Arrival{}, err
		}
		l.passEmpty = false
		if !a.AfterPrevious {
			a.At += l.base
			l.last = max(l.last, a.At)
		}
		a.Index = l.index
		l.index++
		return a, nil
	}
}
