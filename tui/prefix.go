package tui

// togglePrefix switches the prefix-caching demo's shared system prompt on the current
// workload: a new epoch, so that Runs shows the TTFT before and after side by side.
func (m *Model) togglePrefix() {
	if l := m.c.deps.Load; l != nil {
		m.toggleWorkload(&m.c.s.prefixOn, l.SharedPrefix)
	}
}

// toggleWorkload flips one of the load's workload switches and records the workload that
// set gives for its new value.
func (m *Model) toggleWorkload(on *bool, set func(bool) (string, int)) {
	*on = !*on
	m.newWorkload(set(*on))
}

// newWorkload records the workload the load switched to (named name, from epoch n on): the
// Runs view's name for it, the status line, and the epoch it begins.
func (m *Model) newWorkload(name string, n int) {
	c, s := m.c, &m.c.s
	s.workloads[boolIndex(s.longPrompts)] = name
	c.setStatus("workload: "+clean(name), false)
	c.beginEpoch(n, s.util)
}
