package tui

// togglePrefix switches the prefix-caching demo's shared system prompt on the current
// workload: a new epoch, so that Runs shows the TTFT before and after side by side.
func (m *Model) togglePrefix() {
	c, s := m.c, &m.c.s
	if c.deps.Load == nil {
		return
	}
	s.prefixOn = !s.prefixOn
	name, n := c.deps.Load.SharedPrefix(s.prefixOn)
	s.workloads[boolIndex(s.longPrompts)] = name
	c.setStatus("workload: "+clean(name), false)
	c.beginEpoch(n, s.util)
}
