package serve_test

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// markdownTables is the results section of docs/validation.md for the corpus as it is: both
// sets' tables and summaries (VLLMTOP_VALIDATION_MARKDOWN_OUT writes it).
func markdownTables(cases []corpusCase, results map[string]result) string {
	var sb strings.Builder
	for _, set := range []string{"fit", "heldout"} {
		name := map[string]string{"fit": "Fit set", "heldout": "Held-out set"}[set]
		var rows []string
		var errs []float64
		for _, c := range cases {
			if c.Set != set {
				continue
			}
			r := results[c.ID]
			logged, pred, e := caseFigures(c, r, mdMetric, &errs)
			note := outcomeNote(c, r)
			if e != "" && note != "" {
				e += "; "
			}
			gpu := c.GPUProfile
			if gpu == "" {
				gpu = "?"
			}
			if c.TP > 1 {
				gpu += " TP" + strconv.Itoa(c.TP)
			}
			if c.PP > 1 {
				gpu += " PP" + strconv.Itoa(c.PP)
			}
			rows = append(rows, fmt.Sprintf("| `%s` | %s | %s | %s | %s | %s | %s | %s |", c.ID, trunc(c.Model, 44), gpu,
				c.SimVersion, loggedOutcome(c), logged, pred, strings.ReplaceAll(e+note, "|", "/")))
		}
		fmt.Fprintf(&sb, "### %s (%d cases)\n\n", name, len(rows))
		sb.WriteString("| case | model | GPU profile | vLLM | vLLM did | logged | predicted | error / note |\n|---|---|---|---|---|---|---|---|\n")
		sb.WriteString(strings.Join(rows, "\n") + "\n\n")
		fmt.Fprintf(&sb, "**Summary (%s):** %d of %d cases predicted with a figure to compare: %s.\n\n", set, len(errs), len(rows), summary(errs))
	}
	return sb.String()
}

// mdMetric writes a figure as the tables do: tokens with thousands separators, GiB with two
// decimals.
func mdMetric(metric string, v float64) string {
	if metric == "available_kv_gib" {
		return fmt.Sprintf("%.2f GiB", v)
	}
	return textfmt.Thousands(int64(v)) + " tok"
}
