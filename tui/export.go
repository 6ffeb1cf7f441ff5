package tui

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/vllmtop/vllmtop/internal/base/outfile"
	"github.com/vllmtop/vllmtop/loadgen"
)

// exportDoneMsg is a finished export: the files written, or why not.
type exportDoneMsg struct {
	paths []string
	err   error
}

// exportData is what the export key writes, copied on the UI goroutine so the writing can
// run off it.
type exportData struct {
	dir, stamp string
	runs       []loadgen.ResultDoc
	probes     []loadgen.ResultDoc // every probe of the tuning curves, in their order
	curves     []exportCurve
}

type exportCurve struct {
	Name     string  `json:"name"`
	Util     float64 `json:"gpu_memory_utilization"`
	Variable string  `json:"variable"`
	SLO      string  `json:"slo,omitempty"`
	Knee     int     `json:"knee"`
	Probes   int     `json:"probes"`
}

// export writes the Runs and the tuning results as CSV and JSON, in a command.
func (m *Model) export() tea.Cmd {
	c, s := m.c, &m.c.s
	d := exportData{dir: c.deps.ExportDir, stamp: c.now().UTC().Format("20060102-150405")}
	if d.dir == "" {
		d.dir = "."
	}
	now := c.now()
	for i := range s.runs {
		e, active := s.shownRun(i, now)
		d.runs = append(d.runs, runDoc(e, s.notes[e.Epoch], active))
	}
	t := &s.tune
	for _, cv := range t.curves {
		d.curves = append(d.curves, exportCurve{Name: cv.Name, Util: cv.Util, Variable: cv.Variable, SLO: cv.SLO.Text(","), Knee: cv.Knee, Probes: len(cv.Probes)})
		for _, p := range cv.Probes {
			for _, doc := range p.Docs {
				doc = doc.Set("phase", p.Phase)
				if cv.SLO != nil {
					doc = doc.Set("slo", cv.SLO.Text(",")).Set("slo_met", p.Passed())
				}
				if p.Unsustained != "" {
					doc = doc.Set("fell_behind", p.Unsustained)
				}
				d.probes = append(d.probes, doc)
			}
		}
	}
	if len(d.runs) == 0 && len(d.probes) == 0 {
		c.setStatus("nothing to export yet: no run has results", true)
		return nil
	}
	c.setStatus("exporting to "+clean(d.dir)+" ...", false)
	return func() tea.Msg {
		paths, err := d.write()
		return exportDoneMsg{paths: paths, err: err}
	}
}

// exported shows where the export went, short enough for the status line:
// ./vllmtop-{runs,tuning}-STAMP.{csv,json}.
func (m *Model) exported(msg exportDoneMsg) {
	c := m.c
	if msg.err != nil {
		c.setStatus("export failed: "+clean(msg.err.Error()), true)
		return
	}
	c.setStatus("exported "+clean(summarisePaths(msg.paths)), false)
}

// summarisePaths writes files named DIR/vllmtop-KIND-STAMP.EXT as one brace pattern.
func summarisePaths(ps []string) string {
	if len(ps) == 0 {
		return "nothing"
	}
	var kinds, exts []string
	dir, stamp := filepath.Dir(ps[0]), ""
	for _, p := range ps {
		base := filepath.Base(p)
		ext := filepath.Ext(base)
		parts := strings.SplitN(strings.TrimSuffix(base, ext), "-", 3)
		if filepath.Dir(p) != dir || len(parts) != 3 || (stamp != "" && parts[2] != stamp) {
			return strings.Join(ps, ", ")
		}
		stamp = parts[2]
		kinds, exts = appendNew(kinds, parts[1]), appendNew(exts, strings.TrimPrefix(ext, "."))
	}
	brace := func(xs []string) string {
		if len(xs) == 1 {
			return xs[0]
		}
		return "{" + strings.Join(xs, ",") + "}"
	}
	return filepath.Join(dir, "vllmtop-"+brace(kinds)+"-"+stamp+"."+brace(exts))
}

func appendNew(xs []string, x string) []string {
	for _, v := range xs {
		if v == x {
			return xs
		}
	}
	return append(xs, x)
}

// write writes vllmtop-runs-STAMP.{csv,json} and, with tuning results,
// vllmtop-tuning-STAMP.{csv,json}: the probes as summary.csv rows and a JSON of the curves
// with their probes. A file that exists is not overwritten.
func (d exportData) write() ([]string, error) {
	var paths []string
	save := func(name string, data []byte) error {
		path := filepath.Join(d.dir, loadgen.SanitizeFilename(name))
		f, err := outfile.Create(path, outfile.Options{}) // never an existing file, nor through a link
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		paths = append(paths, path)
		return nil
	}
	// pair writes name.csv from docs and name.json from what.
	pair := func(name string, docs []loadgen.ResultDoc, what any) error {
		if len(docs) == 0 {
			return nil
		}
		csvData, err := docsCSV(docs)
		if err != nil {
			return err
		}
		js, err := json.MarshalIndent(what, "", "  ")
		if err != nil {
			return err
		}
		if err := save(name+".csv", csvData); err != nil {
			return err
		}
		return save(name+".json", append(js, '\n'))
	}
	if err := pair("vllmtop-runs-"+d.stamp, d.runs, d.runs); err != nil {
		return paths, err
	}
	tuning := struct {
		Curves []exportCurve       `json:"curves"`
		Probes []loadgen.ResultDoc `json:"probes"`
	}{d.curves, d.probes}
	if err := pair("vllmtop-tuning-"+d.stamp, d.probes, tuning); err != nil {
		return paths, err
	}
	return paths, nil
}

// docsCSV writes documents as summary.csv does.
func docsCSV(docs []loadgen.ResultDoc) ([]byte, error) {
	var b bytes.Buffer
	err := loadgen.WriteSummaryCSV(&b, docs)
	return b.Bytes(), err
}

// runDoc is one row of Runs as a document, with the dashboard's notes beside the load's
// statistics; active is how long its load ran (less pauses).
func runDoc(e loadgen.EpochStats, n *epochNote, active time.Duration) loadgen.ResultDoc {
	f := func(x float64) loadgen.PyFloat { return loadgen.PyFloat(x) }
	d := loadgen.ResultDoc{
		{Key: "epoch", Value: e.Epoch},
		{Key: "start", Value: e.Start.UTC().Format(time.RFC3339)},
		{Key: "settings", Value: clean(e.Settings)},
		{Key: "label", Value: clean(e.Label)},
	}
	if n != nil {
		var kv any // unknown (an epoch that began before the server reported it): empty, not 0
		if n.kvTokens > 0 {
			kv = n.kvTokens
		}
		d = append(d, loadgen.Field{Key: "gpu_memory_utilization", Value: f(n.util)}, loadgen.Field{Key: "workload", Value: clean(n.workload)},
			loadgen.Field{Key: "kv_cache_tokens", Value: kv}, loadgen.Field{Key: "preemptions", Value: f(n.preempt)})
	}
	d = append(d, loadgen.ResultDoc{
		{Key: "active_s", Value: f(active.Seconds())},
		{Key: "completed", Value: e.Requests},
		{Key: "failed", Value: e.Failures},
		{Key: "good", Value: e.Good},
		{Key: "total_input_tokens", Value: e.PromptTokens},
		{Key: "total_output_tokens", Value: e.OutputTokens},
		{Key: "output_throughput", Value: f(e.OutputTokensPerSec())},
	}...)
	return append(d, quantileFields(e)...)
}

// quantileFields are an epoch's latency percentiles with vLLM's key names (median_ttft_ms,
// p90_ttft_ms, p99_ttft_ms, ... for TTFT, TPOT, ITL and E2EL).
func quantileFields(e loadgen.EpochStats) []loadgen.Field {
	ms := func(d time.Duration) loadgen.PyFloat { return loadgen.PyFloat(float64(d) / float64(time.Millisecond)) }
	var out []loadgen.Field
	for _, q := range []struct {
		name string
		q    loadgen.Quantiles
	}{{"ttft", e.TTFT}, {"tpot", e.TPOT}, {"itl", e.ITL}, {"e2el", e.E2EL}} {
		out = append(out, loadgen.Field{Key: "median_" + q.name + "_ms", Value: ms(q.q.P50)},
			loadgen.Field{Key: "p90_" + q.name + "_ms", Value: ms(q.q.P90)},
			loadgen.Field{Key: "p99_" + q.name + "_ms", Value: ms(q.q.P99)})
	}
	return out
}
