package metrics

import (
	"bufio"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// vLLM's /metrics is prometheus_client.generate_latest(registry): the classic text format
// as Python writes it. Tools key series on the exact label text, so the simulator writes the
// families itself rather than with Go's encoder (which prints le="1", not le="1.0"):
//
//   - every value and every le/quantile label through floatToGoString: "1.0", "0.0",
//     "1e-05", "4.5223936e+07";
//   - labels sorted by name, le among them;
//   - families in registration order, each counter, histogram and summary child followed by
//     a "<name>_created" gauge family holding its creation time (single-process mode);
//   - histograms as buckets (up to +Inf), then _count, then _sum.
//
// writeExposition writes fams in the order names lists (families it does not list follow,
// sorted by name). It returns the first write error.
//
// Within a family, Python keeps its children in creation order where Go sorts them by label
// values; rank, when set, gives each series its place (lower first; ties keep Go's order).
//
// A labelled family with no child yet still has its HELP and TYPE lines in Python; Go gathers
// nothing for it, so empty gives those headers (name to help and type).
func writeExposition(w io.Writer, fams []*dto.MetricFamily, order []string, rank func(family string, labels []*dto.LabelPair) int, empty map[string][2]string) error {
	byName := make(map[string]*dto.MetricFamily, len(fams))
	for _, mf := range fams {
		byName[mf.GetName()] = mf
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	seen := make(map[string]bool, len(fams))
	write := func(name string) {
		if mf, ok := byName[name]; ok && !seen[name] {
			seen[name] = true
			if rank != nil {
				slices.SortStableFunc(mf.Metric, func(a, b *dto.Metric) int {
					return rank(name, a.GetLabel()) - rank(name, b.GetLabel())
				})
			}
			writeFamily(bw, mf)
		}
	}
	for _, name := range order {
		if _, ok := byName[name]; !ok {
			if h, ok := empty[name]; ok {
				writeHeader(bw, name, h[0], h[1])
			}
			continue
		}
		write(name)
	}
	rest := make([]string, 0, len(fams))
	for name := range byName {
		if !seen[name] {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	for _, name := range rest {
		write(name)
	}
	return bw.Flush()
}

func writeFamily(w *bufio.Writer, mf *dto.MetricFamily) {
	name, help := mf.GetName(), mf.GetHelp()
	writeHeader(w, name, help, typeName(mf.GetType()))
	var created []createdSample
	for _, m := range mf.GetMetric() {
		labels := m.GetLabel()
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			writeSample(w, name, labels, "", 0, m.GetCounter().GetValue())
			if ts := m.GetCounter().GetCreatedTimestamp(); ts != nil {
				created = append(created, createdSample{labels, ts.AsTime()})
			}
		case dto.MetricType_GAUGE:
			writeSample(w, name, labels, "", 0, m.GetGauge().GetValue())
		case dto.MetricType_UNTYPED:
			writeSample(w, name, labels, "", 0, m.GetUntyped().GetValue())
		case dto.MetricType_HISTOGRAM:
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				if math.IsInf(b.GetUpperBound(), 1) {
					continue // written below from the count, as the +Inf bucket
				}
				writeSample(w, name+"_bucket", labels, "le", b.GetUpperBound(), float64(b.GetCumulativeCount()))
			}
			writeSample(w, name+"_bucket", labels, "le", math.Inf(1), float64(h.GetSampleCount()))
			writeSample(w, name+"_count", labels, "", 0, float64(h.GetSampleCount()))
			writeSample(w, name+"_sum", labels, "", 0, h.GetSampleSum())
			if ts := h.GetCreatedTimestamp(); ts != nil {
				created = append(created, createdSample{labels, ts.AsTime()})
			}
		case dto.MetricType_SUMMARY:
			s := m.GetSummary()
			for _, q := range s.GetQuantile() {
				writeSample(w, name, labels, "quantile", q.GetQuantile(), q.GetValue())
			}
			writeSample(w, name+"_count", labels, "", 0, float64(s.GetSampleCount()))
			writeSample(w, name+"_sum", labels, "", 0, s.GetSampleSum())
			if ts := s.GetCreatedTimestamp(); ts != nil {
				created = append(created, createdSample{labels, ts.AsTime()})
			}
		}
	}
	if len(created) == 0 {
		return
	}
	// prometheus_client's _created family: the counter's name without "_total", same HELP.
	cname := strings.TrimSuffix(name, "_total") + "_created"
	if mf.GetType() == dto.MetricType_HISTOGRAM || mf.GetType() == dto.MetricType_SUMMARY {
		cname = name + "_created"
	}
	writeHeader(w, cname, help, "gauge")
	for _, c := range created {
		writeSample(w, cname, c.labels, "", 0, float64(c.at.UnixNano())/1e9)
	}
}

func writeHeader(w *bufio.Writer, name, help, typ string) {
	w.WriteString("# HELP ")
	w.WriteString(name)
	w.WriteByte(' ')
	w.WriteString(escapeHelp(help))
	w.WriteString("\n# TYPE ")
	w.WriteString(name)
	w.WriteByte(' ')
	w.WriteString(typ)
	w.WriteByte('\n')
}

// writeSample writes one line; extra is an additional label ("le" or "quantile") with the
// float value bound, sorted in among the others.
func writeSample(w *bufio.Writer, name string, labels []*dto.LabelPair, extra string, bound, value float64) {
	w.WriteString(name)
	if len(labels) > 0 || extra != "" {
		pairs := make([][2]string, 0, len(labels)+1)
		for _, l := range labels {
			pairs = append(pairs, [2]string{l.GetName(), l.GetValue()})
		}
		if extra != "" {
			pairs = append(pairs, [2]string{extra, floatToGoString(bound)})
		}
		slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
		w.WriteByte('{')
		for i, p := range pairs {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(p[0])
			w.WriteString(`="`)
			w.WriteString(escapeLabel(p[1]))
			w.WriteByte('"')
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(floatToGoString(value))
	w.WriteByte('\n')
}

type createdSample struct {
	labels []*dto.LabelPair
	at     interface{ UnixNano() int64 }
}

func typeName(t dto.MetricType) string {
	switch t {
	case dto.MetricType_COUNTER:
		return "counter"
	case dto.MetricType_GAUGE:
		return "gauge"
	case dto.MetricType_HISTOGRAM:
		return "histogram"
	case dto.MetricType_SUMMARY:
		return "summary"
	}
	return "untyped"
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

// floatToGoString is prometheus_client's utils.floatToGoString: Python's repr of the float,
// but in exponent form from 1e6 up for positive values ("Go switches to exponents sooner than
// Python"), with the exponent written as e+0N, so 1e10 becomes "1e+010" as Python writes it.
func floatToGoString(d float64) string {
	switch {
	case math.IsInf(d, 1):
		return "+Inf"
	case math.IsInf(d, -1):
		return "-Inf"
	case math.IsNaN(d):
		return "NaN"
	}
	s := pyRepr(d)
	dot := strings.IndexByte(s, '.')
	if d > 0 && dot > 6 {
		mantissa := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return mantissa + "e+0" + strconv.Itoa(dot-1)
	}
	return s
}

// pyRepr is Python's repr(float).
func pyRepr(f float64) string { return pyFloat(f) }
