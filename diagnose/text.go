package diagnose

import (
	"fmt"
	"io"
	"strings"
)

// WriteText prints a "Verdicts" block: each verdict's rule and severity, what it saw (its
// evidence against the thresholds) and the flags to change. No verdict prints "HEALTHY".
func WriteText(w io.Writer, vs []Verdict) {
	fmt.Fprintln(w, "Verdicts")
	if len(vs) == 0 {
		fmt.Fprintln(w, "  HEALTHY: no rule fired")
		return
	}
	for _, v := range vs {
		fmt.Fprintf(w, "  %-8s %s: %s\n", v.Severity, v.Rule, v.Text)
		if len(v.Evidence) > 0 {
			ev := make([]string, len(v.Evidence))
			for i, e := range v.Evidence {
				ev[i] = e.String()
			}
			fmt.Fprintf(w, "           saw: %s\n", strings.Join(ev, "; "))
		}
		if len(v.Flags) > 0 {
			fmt.Fprintf(w, "           change: %s\n", strings.Join(v.Flags, " "))
		}
	}
}
