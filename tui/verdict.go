package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// Failing load: at least failingMin failed requests in the live window (or the epoch), and
// more failed than succeeded. Fewer are noise a retry hides; more failing than not is a server
// the user cannot call healthy whatever its metrics say.
const failingMin = 5

// loadFailing reports whether the load's requests mostly fail, and the commonest error class.
func loadFailing(s *state) (string, bool) {
	done, failed, by := s.live.Requests, s.live.Failures, s.live.FailuresByClass
	if failed < failingMin {
		if i := s.runIndex(s.epoch); i >= 0 {
			done, failed, by = s.runs[i].Requests, s.runs[i].Failures, s.live.FailuresByClass
		}
	}
	if failed < failingMin || failed <= done {
		return "", false
	}
	return topClass(by), true
}

// topClass is the class with the most failures ("" for none); ties go to the name first in order.
func topClass(by map[loadgen.ErrorClass]int) string {
	best, n := "", 0
	for k, v := range by {
		if name := string(k); v > n || (v == n && name < best) {
			best, n = name, v
		}
	}
	return best
}

// worstVerdict is the first warning or critical verdict in Sort order.
func worstVerdict(vs []diagnose.Verdict) (diagnose.Verdict, bool) {
	sorted := append([]diagnose.Verdict(nil), vs...)
	diagnose.Sort(sorted)
	for _, v := range sorted {
		if v.Severity != diagnose.Info {
			return v, true
		}
	}
	return diagnose.Verdict{}, false
}

// verdictLine is a verdict's diagnose.Verdict.Line in at most width cells: "kv-bound ·
// kv_cache_usage 94% (≥ 90%), waiting 3 (≥ 1) · raise --gpu-memory-utilization". Where it
// does not fit, evidence goes (its first figure last), then the advice is cut: the advice,
// which names the flag to change, stays on the line as long as it can. A verdict without
// advice offers its flags.
func verdictLine(v diagnose.Verdict, width int) string {
	v.Limit, v.Advice = clean(v.Limit), clean(v.Advice)
	if v.Limit == "" {
		v.Limit = clean(v.Rule)
	}
	if v.Advice == "" && len(v.Flags) > 0 {
		v.Advice = "change " + clean(strings.Join(v.Flags, ", "))
	}
	var key []diagnose.Evidence // what Line shows first: the figures held against a threshold
	for _, e := range v.Evidence {
		if e.Threshold != "" {
			key = append(key, e)
		}
	}
	if len(key) == 0 {
		key = v.Evidence
	}
	try := func(ev []diagnose.Evidence, advice string) (string, bool) {
		short := v
		short.Evidence, short.Advice = ev, advice
		s := clean(short.Line())
		return s, lipgloss.Width(s) <= width
	}
	for n := min(len(key), 2); n >= 1; n-- {
		if s, ok := try(key[:n], v.Advice); ok {
			return s
		}
	}
	// The advice shrinks to the flag it names, with the first figure, then the figure
	// without its threshold, then alone.
	if len(v.Flags) > 0 && len(key) > 0 {
		bare := key[0]
		bare.Threshold = ""
		for _, ev := range [][]diagnose.Evidence{key[:1], {bare}, nil} {
			flag := clean(v.Flags[0])
			if flag == v.Limit {
				flag = "" // the limit is the flag: said once
			}
			if s, ok := try(ev, flag); ok {
				return s
			}
		}
	}
	if s, ok := try(nil, v.Advice); ok {
		return s
	}
	return truncate(clean(v.Line()), width)
}

// verdictItem is the header's verdict: FAILING and the error class when the load's requests
// mostly fail, HEALTHY, or the overall state and the rules that fired, worst first
// ("DEGRADED queue-bound, kv-bound"); full is the worst verdict's sentence ("DEGRADED: ...
// (+1 more)"), which the header shows instead when it fits in the room the load's own figures
// leave.
func verdictItem(c *common) (short item, full string, ok bool) {
	st := &c.styles
	if class, failing := loadFailing(&c.s); failing && c.deps.Load != nil {
		text := "FAILING"
		if class != "" {
			text += " " + clean(class)
		}
		return item{st.Bad.Render(text), 0}, "", true
	}
	if c.s.snap == nil {
		return item{}, "", false
	}
	o, sum := diagnose.Summary(c.s.verdicts)
	if o == diagnose.Healthy {
		return item{st.Good.Render("HEALTHY"), 1}, "", true
	}
	sorted := append([]diagnose.Verdict(nil), c.s.verdicts...)
	diagnose.Sort(sorted)
	var rules []string
	for _, v := range sorted {
		if v.Severity != diagnose.Info && !slices.Contains(rules, v.Rule) {
			rules = append(rules, v.Rule)
		}
	}
	style := overallStyle(st, o)
	return item{style.Render(o.String() + " " + clean(strings.Join(rules, ", "))), 2}, style.Render(clean(sum)), true
}

// footerVerdict is the worst verdict's line for the footer, in width cells, styled by its
// severity; "" when every verdict is informational.
func footerVerdict(c *common, width int) string {
	v, ok := worstVerdict(c.s.verdicts)
	if !ok || width < 12 {
		return ""
	}
	style := c.styles.Warn
	if v.Severity == diagnose.Critical {
		style = c.styles.Bad
	}
	return style.Render(verdictLine(v, width))
}

// compactVerdict is the short verdict for a narrow header: the state, the worst rule and how
// many more fired ("DEGRADED kv-bound +2"); empty when healthy or failing (already short).
func compactVerdict(c *common) item {
	o, _ := diagnose.Summary(c.s.verdicts)
	v, ok := worstVerdict(c.s.verdicts)
	if _, failing := loadFailing(&c.s); !ok || o == diagnose.Healthy || (failing && c.deps.Load != nil) {
		return item{}
	}
	var rules []string
	for _, x := range c.s.verdicts {
		if x.Severity != diagnose.Info && !slices.Contains(rules, x.Rule) {
			rules = append(rules, x.Rule)
		}
	}
	text := o.String() + " " + clean(v.Rule)
	if n := len(rules) - 1; n > 0 {
		text += fmt.Sprintf(" +%d", n)
	}
	return item{overallStyle(&c.styles, o).Render(text), 2}
}
