package sim

// Priority scheduling (--scheduling-policy priority), as vLLM's scheduler does it: the waiting
// queue is ordered by (priority, arrival), lower values first, and when KV blocks run out the
// running request with the largest (priority, arrival) is preempted instead of the newest.

// PolicyPriority is --scheduling-policy priority; anything else is first come, first served.
const PolicyPriority = "priority"

func (e *Engine) priorityPolicy() bool { return e.setup.SchedulingPolicy == PolicyPriority }

// before reports whether a is served before b under priority scheduling.
func before(a, b *Sequence) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	if !a.Arrival.Equal(b.Arrival) {
		return a.Arrival.Before(b.Arrival)
	}
	return a.seqNo < b.seqNo
}

// enqueue puts s in the waiting queue: at the back (fcfs), or at its place by priority.
func (e *Engine) enqueue(s *Sequence) {
	if !e.priorityPolicy() {
		e.waiting = append(e.waiting, s)
		return
	}
	i := len(e.waiting)
	for i > 0 && before(s, e.waiting[i-1]) {
		i--
	}
	e.waiting = append(e.waiting, nil)
	copy(e.waiting[i+1:], e.waiting[i:])
	e.waiting[i] = s
}

// requeue puts a preempted s back: at the front (fcfs), or at its place by priority.
func (e *Engine) requeue(s *Sequence) {
	if e.priorityPolicy() {
		e.enqueue(s)
		return
	}
	e.waiting = append(e.waiting, nil)
	copy(e.waiting[1:], e.waiting)
	e.waiting[0] = s
}

// victim removes and returns the running request to preempt: the newest (fcfs), or the one
// served last by priority among those not yet scheduled this step (from index from on).
func (e *Engine) victim(from int) *Sequence {
	i := len(e.running) - 1
	if e.priorityPolicy() {
		for j := from; j < len(e.running); j++ {
			if before(e.running[i], e.running[j]) {
				i = j
			}
		}
	}
	v := e.running[i]
	e.running = append(e.running[:i], e.running[i+1:]...)
	return v
}
