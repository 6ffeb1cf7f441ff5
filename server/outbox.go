package server

import "sync"

// outbox delivers events to one consumer over an unbuffered channel without ever blocking the
// producers. State changes are queued without limit (there are a handful per run). Parsed log
// events are queued up to maxEvents and then dropped and counted. Log lines are collected into
// LogBatch events of at most maxLines lines; while the consumer is behind, the oldest pending
// lines are dropped and the count travels in the next batch.
//
// A goroutine started by newOutbox owns the sending. close makes it deliver what is queued and
// then close the channel; the consumer must keep receiving until then.
type outbox struct {
	out chan Event

	mu            sync.Mutex
	queue         []Event // must-deliver events, oldest first
	parsedQueued  int     // how many of queue are parsed log events
	lines         []Line  // lines not yet offered
	linesDropped  uint64  // lines dropped since the last delivered batch
	totalDropped  uint64  // all lines dropped
	eventsDropped uint64  // parsed events dropped
	closing       bool

	maxEvents int
	maxLines  int

	wakeEvent chan struct{} // a must-deliver event or close arrived
	wakeLine  chan struct{} // lines arrived
	done      chan struct{} // closed when the goroutine has closed out
}

func newOutbox(maxEvents, maxLines int) *outbox {
	o := &outbox{
		out:       make(chan Event),
		maxEvents: max(1, maxEvents),
		maxLines:  max(1, maxLines),
		wakeEvent: make(chan struct{}, 1),
		wakeLine:  make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	go o.run()
	return o
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// state queues a state change; it is never dropped.
func (o *outbox) state(ev Event) {
	o.mu.Lock()
	if !o.closing {
		o.queue = append(o.queue, ev)
	}
	o.mu.Unlock()
	wake(o.wakeEvent)
}

// parsed queues an event ParseLogLine produced, or drops it if maxEvents are already waiting.
func (o *outbox) parsed(ev Event) {
	o.mu.Lock()
	switch {
	case o.closing:
	case o.parsedQueued >= o.maxEvents:
		o.eventsDropped++
	default:
		o.queue = append(o.queue, ev)
		o.parsedQueued++
	}
	o.mu.Unlock()
	wake(o.wakeEvent)
}

// line adds a line to the next batch, dropping the oldest pending line when maxLines wait.
func (o *outbox) line(l Line) {
	o.mu.Lock()
	if !o.closing {
		if len(o.lines) >= o.maxLines {
			n := len(o.lines) - o.maxLines + 1
			o.lines = append(o.lines[:0], o.lines[n:]...)
			o.linesDropped += uint64(n)
			o.totalDropped += uint64(n)
		}
		o.lines = append(o.lines, l)
	}
	o.mu.Unlock()
	wake(o.wakeLine)
}

// dropped returns the numbers of log lines and parsed events dropped so far.
func (o *outbox) dropped() (lines, events uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.totalDropped, o.eventsDropped
}

// close asks the goroutine to deliver what is queued and close the channel. It does not wait.
func (o *outbox) close() {
	o.mu.Lock()
	o.closing = true
	o.mu.Unlock()
	wake(o.wakeEvent)
}

func (o *outbox) run() {
	defer close(o.done)
	defer close(o.out)
	var offered *LogBatch // a batch taken from lines and not yet received
	for {
		o.mu.Lock()
		var next Event
		fromQueue := len(o.queue) > 0
		switch {
		case fromQueue:
			next = o.queue[0]
		case offered != nil:
			next = *offered
		case len(o.lines) > 0 || o.linesDropped > 0:
			b := LogBatch{Lines: o.lines, Dropped: o.linesDropped}
			o.lines = nil
			o.linesDropped = 0
			offered = &b
			next = b
		case o.closing:
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()

		if next == nil {
			select {
			case <-o.wakeEvent:
			case <-o.wakeLine:
			}
			continue
		}
		// While a batch is on offer, new lines accumulate for the next one; only a
		// must-deliver event (or close) interrupts the offer, so it is not held up behind
		// log traffic the consumer is not reading.
		select {
		case o.out <- next:
			if fromQueue {
				o.mu.Lock()
				if _, ok := o.queue[0].(StateChanged); !ok {
					o.parsedQueued--
				}
				o.queue[0] = nil
				o.queue = o.queue[1:]
				o.mu.Unlock()
			} else {
				offered = nil
			}
		case <-o.wakeEvent:
		}
	}
}
