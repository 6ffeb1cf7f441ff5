package server

// causeTracker finds the line that explains an exit. vLLM prints the root cause first (in the
// engine core's logged traceback) and then long tracebacks that end in generic messages
// ("RuntimeError: Engine core initialization failed. See root cause above."), so the last line
// is rarely the cause. Guarded by Supervisor.mu.
type causeTracker struct {
	root      *Fatal // the first failure line that names a cause
	generic   *Fatal // the first "engine failed" line
	exception string // the last Python exception line that is not a generic engine failure
	last      string // the last non-empty line
}

func (c *causeTracker) observe(msg string, ev Event, ok bool) {
	if msg == "" {
		return
	}
	c.last = msg
	if f, isFatal := ev.(Fatal); ok && isFatal {
		if !f.Reason.RootCause() {
			// "RuntimeError: Engine core initialization failed. See root cause above." is an
			// exception line too, but never the cause.
			if c.generic == nil {
				c.generic = &f
			}
			return
		}
		if c.root == nil {
			c.root = &f
		}
	}
	if exceptionLine(msg) {
		c.exception = msg
	}
}

// result returns the cause line and its reason. After a requested stop only a recognised
// failure counts; otherwise the root cause, else the last exception, else vLLM's generic
// failure line, else the last line.
func (c *causeTracker) result(requested bool) (string, FatalReason) {
	switch {
	case c.root != nil:
		return c.root.Line, c.root.Reason
	case requested:
		return "", ReasonUnknown
	case c.exception != "":
		return c.exception, ReasonUnknown
	case c.generic != nil:
		return c.generic.Line, c.generic.Reason
	}
	return c.last, ReasonUnknown
}
