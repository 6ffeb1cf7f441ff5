package scrape

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
)

// ErrEmptyBody is the error for a body with nothing but blanks in it: a server that answers
// /metrics with nothing is broken, not idle (an idle vLLM still exports every series).
var ErrEmptyBody = errors.New("empty /metrics body")

// maxCount bounds every count and gauge a Snapshot maps: 2^53, past which a float64 cannot
// even count by one. A value above it, negative, NaN or infinite is not a measurement.
const maxCount = 1 << 53

// Parse reads a Prometheus text exposition (format 0.0.4, what vLLM serves) and maps it to a
// Snapshot. Families it does not know are kept in Snapshot.Unmapped; only input that is not
// Prometheus text at all, or is empty (ErrEmptyBody), is an error. Parse reads r to its end; bound r yourself (Client
// caps the body). Safe for concurrent use: each call has its own parser.
func Parse(r io.Reader) (Snapshot, error) {
	var buf bytes.Buffer
	if l, ok := r.(interface{ Len() int }); ok {
		buf.Grow(l.Len() + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return Snapshot{}, err
	}
	return parseBytes(buf.Bytes())
}

// parseBytes parses a whole body, which it may overwrite. The "_created" families are cut
// out before the text parser sees them: they are ignored anyway, and in a single-process vLLM
// scrape they are a fifth of the lines, so this saves a fifth of the parsing.
func parseBytes(b []byte) (Snapshot, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return Snapshot{}, ErrEmptyBody
	}
	fams, err := parseFamilies(bytes.NewReader(dropCreated(b)))
	if err != nil {
		return Snapshot{}, err
	}
	return FromFamilies(fams), nil
}

// dropCreated removes the sample, HELP and TYPE lines of families whose name ends in
// "_created". It works in place (the kept lines move towards the start of b, never past what
// is still to be read) and returns the shortened slice.
func dropCreated(b []byte) []byte {
	if !bytes.Contains(b, []byte(createdSuffix)) {
		return b
	}
	out := b[:0]
	for len(b) > 0 {
		end := bytes.IndexByte(b, '\n')
		line := b
		if end >= 0 {
			line = b[:end+1]
		}
		b = b[len(line):]
		if !isCreatedLine(line) {
			out = append(out, line...)
		}
	}
	return out
}

// isCreatedLine reports whether a line belongs to a "_created" family: a sample whose name
// ends in "_created", or "# HELP"/"# TYPE" naming one.
func isCreatedLine(line []byte) bool {
	line = bytes.TrimLeft(line, " \t")
	if bytes.HasPrefix(line, []byte("#")) {
		rest := bytes.TrimLeft(line[1:], " \t")
		if !bytes.HasPrefix(rest, []byte("HELP")) && !bytes.HasPrefix(rest, []byte("TYPE")) {
			return false
		}
		line = bytes.TrimLeft(rest[4:], " \t")
	}
	i := bytes.IndexAny(line, "{ \t\r\n")
	if i < 0 {
		i = len(line)
	}
	return bytes.HasSuffix(line[:i], []byte(createdSuffix))
}

// parseFamilies runs the text parser. A TextParser must come from NewTextParser (its zero
// value panics on the first name) and must not be shared between goroutines, so each call
// makes its own.
//
// The parser wants every line, the last one too, to end in a newline; some servers (and
// files saved from them) omit the final one, so one is always added: an empty last line is
// harmless.
func parseFamilies(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.MultiReader(r, strings.NewReader("\n")))
	if err != nil {
		return nil, fmt.Errorf("not Prometheus text: %w", err)
	}
	return fams, nil
}

type seriesKey struct{ model, engine string }

// mapper accumulates one snapshot.
type mapper struct {
	snap   Snapshot
	stats  map[seriesKey]*Stats
	cache  map[string]*CacheConfig
	sglTok Value
	warned map[string]bool
	key    []byte // scratch for label keys
	// The families with repeated label sets, and with values left out: counted and named in
	// one warning each (a hostile exposition may have thousands).
	dupFamilies, badFamilies []string
	badFamily                string // the last family added to badFamilies
}

// FromFamilies maps parsed metric families (as expfmt's parsers return them) to a Snapshot.
// It does not modify fams. Every string from the server (model names, engines, label values,
// family names and help) is sanitised for a terminal (sanitize.Text); numbers that cannot be
// what their field says (NaN, infinite, negative, above 2^53, a fraction outside 0..1) are left
// out with a warning; series that repeat a label set are counted in DuplicateSeries and only
// the last of them is used. Its cost is linear in the number of series (and n log n for the
// sorting of models and engines).
func FromFamilies(fams map[string]*dto.MetricFamily) Snapshot {
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)

	m := mapper{stats: map[seriesKey]*Stats{}, cache: map[string]*CacheConfig{}}

	// The backend is the first known prefix among the families (vLLM before SGLang before TGI).
	for _, n := range names {
		if b := backendOf(n); b != BackendUnknown && (m.snap.Backend == BackendUnknown || b < m.snap.Backend) {
			m.snap.Backend = b
		}
	}

	// For each rule, the most preferred of its names that is present.
	chosen := map[*rule]ruleRef{}
	for _, n := range names {
		ref, ok := ruleIndex[n]
		if !ok || len(fams[n].GetMetric()) == 0 {
			continue
		}
		if cur, ok := chosen[ref.r]; !ok || ref.pref < cur.pref {
			chosen[ref.r] = ref
		}
	}

	for _, n := range names {
		mf := fams[n]
		if strings.HasSuffix(n, createdSuffix) {
			continue
		}
		ms := m.unique(mf)
		if ref, ok := ruleIndex[n]; ok {
			if c, ok := chosen[ref.r]; ok && c.pref == ref.pref {
				m.apply(ref.r, mf.GetName(), ms)
				continue
			}
		}
		m.snap.Unmapped = append(m.snap.Unmapped, m.rawFamily(mf, ms))
	}
	m.finish()
	return m.snap
}

// statsFor returns the accumulator of one (model, engine).
func (m *mapper) statsFor(modelName, engine string) *Stats {
	k := seriesKey{modelName, engine}
	s := m.stats[k]
	if s == nil {
		s = &Stats{}
		m.stats[k] = s
	}
	return s
}

func (m *mapper) warn(msg string) {
	if m.warned[msg] {
		return
	}
	if m.warned == nil {
		m.warned = map[string]bool{}
	}
	m.warned[msg] = true
	m.snap.Warnings = append(m.snap.Warnings, msg)
}

// unique returns mf's series without repeated label sets: of the series that share one, the
// last is kept, in the place of the first. Repeats are counted in DuplicateSeries and warned
// about. A histogram's or summary's repeats never get here: the text parser merges them into
// one series (see histogramOf).
func (m *mapper) unique(mf *dto.MetricFamily) []*dto.Metric {
	ms := mf.GetMetric()
	if len(ms) < 2 {
		return ms
	}
	seen := make(map[string]int, len(ms)) // label key -> index among the kept
	var out []*dto.Metric                 // nil until the first repeat
	kept, dups := 0, 0
	for i, metric := range ms {
		m.key = labelKey(m.key[:0], metric.GetLabel())
		if j, dup := seen[string(m.key)]; dup {
			if out == nil {
				out = make([]*dto.Metric, i, len(ms))
				copy(out, ms[:i])
			}
			out[j] = metric
			dups++
			continue
		}
		seen[string(m.key)] = kept
		kept++
		if out != nil {
			out = append(out, metric)
		}
	}
	if out == nil {
		return ms
	}
	m.duplicates(mf.GetName(), dups)
	return out
}

func (m *mapper) duplicates(family string, n int) {
	m.snap.DuplicateSeries += n
	m.dupFamilies = append(m.dupFamilies, sanitize.Text(family))
}

// ignored counts one value of family left out as out of range.
func (m *mapper) ignored(family string) {
	m.snap.IgnoredValues++
	if family != m.badFamily {
		m.badFamily = family
		m.badFamilies = append(m.badFamilies, sanitize.Text(family))
	}
}

// countedWarnings are the warnings of duplicates and of values left out, one of each, with
// their counts and the first families they were in.
func (m *mapper) countedWarnings() []string {
	var out []string
	if n := m.snap.DuplicateSeries; n > 0 {
		out = append(out, fmt.Sprintf("%d duplicate series, the last of each kept (%s)", n, familyList(m.dupFamilies)))
	}
	if n := m.snap.IgnoredValues; n > 0 {
		out = append(out, fmt.Sprintf("%d values left out: NaN, infinite, negative or absurd (%s)", n, familyList(m.badFamilies)))
	}
	return out
}

// familyList names the families, the first three of them: "2 families: a, b".
func familyList(fams []string) string {
	fams = compactStrings(fams)
	word := "families"
	if len(fams) == 1 {
		word = "family"
	}
	names := strings.Join(fams[:min(len(fams), 3)], ", ")
	if len(fams) > 3 {
		names += ", …"
	}
	return fmt.Sprintf("%d %s: %s", len(fams), word, names)
}

// compactStrings drops repeats, keeping the first of each in order.
func compactStrings(xs []string) []string {
	seen := make(map[string]bool, len(xs))
	out := xs[:0:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// labelKey appends a canonical form of a label set to b: the pairs sorted by name, each part
// length-prefixed, so no two different sets share a key.
func labelKey(b []byte, lps []*dto.LabelPair) []byte {
	sorted := true
	for i := 1; i < len(lps); i++ {
		if lps[i-1].GetName() > lps[i].GetName() {
			sorted = false
			break
		}
	}
	if !sorted {
		lps = append([]*dto.LabelPair(nil), lps...)
		sort.Slice(lps, func(i, j int) bool { return lps[i].GetName() < lps[j].GetName() })
	}
	for _, lp := range lps {
		b = binary.AppendUvarint(b, uint64(len(lp.GetName())))
		b = append(b, lp.GetName()...)
		b = binary.AppendUvarint(b, uint64(len(lp.GetValue())))
		b = append(b, lp.GetValue()...)
	}
	return b
}

// seriesLabels finds the model, the engine and one more label (want) of a series, sanitised.
func seriesLabels(b Backend, metric *dto.Metric, want string) (modelName, engine, wanted string, hasWanted bool) {
	engine = defaultEngine
	named := false
	for _, lp := range metric.GetLabel() {
		name := lp.GetName()
		switch {
		case name == engineLabel:
			engine = sanitize.Text(lp.GetValue())
		case modelLabel(b, name):
			// "model_name" wins over SGLang's older "name".
			if !named || name == "model_name" {
				modelName = sanitize.Text(lp.GetValue())
				named = name == "model_name"
			}
		}
		if want != "" && name == want {
			wanted, hasWanted = sanitize.Text(lp.GetValue()), true
		}
	}
	return modelName, engine, wanted, hasWanted
}

// countOK reports whether v can be a count or a gauge of requests, tokens or seconds.
func countOK(v float64) bool { return v >= 0 && v <= maxCount }

// fractionOK reports whether v can be a fraction such as the KV-cache usage.
func fractionOK(v float64) bool { return v >= 0 && v <= 1 }

// sane returns the scalar of a series if it is one that the rule's field can hold, and warns
// once per family about those it cannot.
func (m *mapper) sane(family string, metric *dto.Metric, ok func(float64) bool) (float64, bool) {
	v, present := scalar(metric)
	if !present {
		return 0, false
	}
	if !ok(v) {
		m.ignored(family)
		return 0, false
	}
	return v, true
}

func (m *mapper) apply(r *rule, family string, metrics []*dto.Metric) {
	if m.applyToSnapshot(r, family, metrics) {
		return
	}
	for _, metric := range metrics {
		want := r.label
		if r.kind == kindAwake {
			want = "sleep_state"
		}
		modelName, engine, lv, has := seriesLabels(r.backend, metric, want)
		s := m.statsFor(modelName, engine)
		switch r.kind {
		case kindSum:
			if v, ok := m.sane(family, metric, countOK); ok {
				p := r.value(s)
				*p = p.plus(Some(v))
			}
		case kindMax:
			if v, ok := m.sane(family, metric, fractionOK); ok {
				p := r.value(s)
				*p = maxValue(*p, Some(v))
			}
		case kindAwake:
			if v, ok := m.sane(family, metric, fractionOK); ok && has && lv == "awake" {
				*r.value(s) = Some(v)
			}
		case kindByLabel:
			v, ok := m.sane(family, metric, countOK)
			if !ok {
				continue
			}
			key := r.key
			if r.label != "" {
				if !has {
					continue
				}
				key = lv
			}
			mp := r.byMap(s)
			if *mp == nil {
				*mp = map[string]float64{}
			}
			(*mp)[key] += v
			if r.value != nil {
				p := r.value(s)
				*p = p.plus(Some(v))
			}
		case kindHist:
			h := m.histogram(family, metric)
			if h == nil {
				continue
			}
			if !histogramOK(h) {
				m.ignored(family)
				continue
			}
			p := r.hist(s)
			if *p == nil {
				*p = h
				continue
			}
			merged, ok := mergeHist(*p, h)
			if !ok {
				m.warn(fmt.Sprintf("%s: series with different bucket layouts for model %q engine %s; kept the first", sanitize.Text(family), modelName, engine))
				continue
			}
			*p = merged
		}
	}
}

// applyToSnapshot maps the families that describe the whole server rather than a model's
// series, and reports whether r was one of those.
func (m *mapper) applyToSnapshot(r *rule, family string, metrics []*dto.Metric) bool {
	switch r.kind {
	case kindCacheInfo:
		m.cacheInfo(metrics)
		return true
	case kindProcessStart:
		for _, metric := range metrics {
			if v, ok := m.sane(family, metric, countOK); ok {
				m.snap.ProcessStartSeconds = Some(v)
				break
			}
		}
		return true
	case kindCapacityTokens:
		for _, metric := range metrics {
			if v, ok := m.sane(family, metric, countOK); ok {
				m.sglTok = m.sglTok.plus(Some(v))
			}
		}
		return true
	}
	return false
}

// histogram converts a series' histogram, counting the repeats the text parser merged into it.
func (m *mapper) histogram(family string, metric *dto.Metric) *Histogram {
	h, dups := histogramOf(metric)
	if dups > 0 {
		m.duplicates(family, dups)
	}
	return h
}

// histogramOK reports whether every count of h can be a count and its sum is a number.
func histogramOK(h *Histogram) bool {
	if !countOK(h.Count) || math.IsNaN(h.Sum) || math.IsInf(h.Sum, 0) {
		return false
	}
	for _, b := range h.Buckets {
		if !countOK(b.Count) {
			return false
		}
	}
	return true
}

// scalar is the value of a counter, gauge or untyped sample (whatever the family's declared
// type, so a counter exposed without its # TYPE line still maps).
func scalar(m *dto.Metric) (float64, bool) {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), true
	case m.Untyped != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// histogramOf converts a classic histogram: buckets sorted, a +Inf bucket at the end. A
// bucket whose bound is NaN is dropped. A series repeated in the exposition reaches here as
// one histogram whose bounds repeat (the text parser merges series by label set, and keeps
// the last count and sum): for each bound the last bucket is kept, which goes with that count
// and sum, and dups says how many repeats there were.
func histogramOf(m *dto.Metric) (h *Histogram, dups int) {
	dh := m.GetHistogram()
	if dh == nil {
		return nil, 0
	}
	bs := dh.GetBucket()
	h = &Histogram{Buckets: make([]Bucket, 0, len(bs)+1), Sum: dh.GetSampleSum()}
	countSet := dh.SampleCount != nil || dh.SampleCountFloat != nil
	h.Count = float64(dh.GetSampleCount())
	if dh.SampleCountFloat != nil {
		h.Count = dh.GetSampleCountFloat()
	}
	sorted := true
	for _, b := range bs {
		c := float64(b.GetCumulativeCount())
		if b.CumulativeCountFloat != nil {
			c = b.GetCumulativeCountFloat()
		}
		ub := b.GetUpperBound()
		if math.IsNaN(ub) {
			continue
		}
		if n := len(h.Buckets); n > 0 && !(h.Buckets[n-1].UpperBound < ub) {
			sorted = false
		}
		h.Buckets = append(h.Buckets, Bucket{UpperBound: ub, Count: c})
	}
	if !sorted {
		sort.SliceStable(h.Buckets, func(i, j int) bool { return h.Buckets[i].UpperBound < h.Buckets[j].UpperBound })
		// Repeated bounds are now side by side, in the order they came: keep the last.
		out := h.Buckets[:0]
		run := 0
		for i, b := range h.Buckets {
			if i > 0 && out[len(out)-1].UpperBound == b.UpperBound {
				out[len(out)-1] = b
				run++
				dups = max(dups, run)
				continue
			}
			run = 0
			out = append(out, b)
		}
		h.Buckets = out
	}
	if n := len(h.Buckets); n == 0 || !math.IsInf(h.Buckets[n-1].UpperBound, 1) {
		h.Buckets = append(h.Buckets, Bucket{UpperBound: math.Inf(1), Count: h.Count})
	} else if !countSet {
		h.Count = h.Buckets[n-1].Count
	}
	return h, dups
}

func (m *mapper) cacheInfo(metrics []*dto.Metric) {
	for _, metric := range metrics {
		c := &CacheConfig{Engine: defaultEngine, Labels: make(map[string]string, len(metric.GetLabel()))}
		for _, lp := range metric.GetLabel() {
			v := sanitize.Text(lp.GetValue())
			c.Labels[sanitize.Text(lp.GetName())] = v
			if lp.GetName() == engineLabel {
				c.Engine = v
			}
		}
		c.BlockSizeTokens = labelNumber(c.Labels, "block_size")
		c.NumGPUBlocks = labelNumber(c.Labels, "num_gpu_blocks")
		c.GPUMemoryUtilization = labelNumber(c.Labels, "gpu_memory_utilization")
		c.KVCacheSizeTokens = labelNumber(c.Labels, "kv_cache_size_tokens")
		c.MaxConcurrency = labelNumber(c.Labels, "kv_cache_max_concurrency")
		c.CacheDType = c.Labels["cache_dtype"]
		switch c.Labels["enable_prefix_caching"] {
		case "True":
			c.PrefixCaching = Some(1)
		case "False":
			c.PrefixCaching = Some(0)
		}
		m.cache[c.Engine] = c
	}
}

// labelNumber reads a label holding Python's str() of a number; "None" and the rest are absent.
func labelNumber(labels map[string]string, name string) Value {
	s, ok := labels[name]
	if !ok {
		return Value{}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !countOK(f) {
		return Value{}
	}
	return Some(f)
}

// finish groups the accumulated series into models, sums the engines and derives capacity.
func (m *mapper) finish() {
	// Cache config, per engine.
	for _, c := range m.cache {
		m.snap.Cache = append(m.snap.Cache, *c)
	}
	sort.Slice(m.snap.Cache, func(i, j int) bool { return engineLess(m.snap.Cache[i].Engine, m.snap.Cache[j].Engine) })
	m.snap.Capacity = capacityOf(m.snap.Cache)
	if m.sglTok.OK {
		m.snap.Capacity.KVCacheTokens = m.sglTok
	}

	m.snap.Models = []Model{}
	byModel := map[string][]EngineStats{}
	for k, s := range m.stats {
		byModel[k.model] = append(byModel[k.model], EngineStats{Engine: k.engine, Stats: *s})
	}
	models := make([]string, 0, len(byModel))
	for name := range byModel {
		models = append(models, name)
	}
	sort.Strings(models)
	capacity := map[string]float64{}
	if len(models) == 1 { // the cache config has no model label: it only joins one model
		for _, c := range m.snap.Cache {
			if c.KVCacheSizeTokens.OK && c.KVCacheSizeTokens.V > 0 {
				capacity[c.Engine] = c.KVCacheSizeTokens.V
			}
		}
	}
	for _, name := range models {
		engines := byModel[name]
		sort.Slice(engines, func(i, j int) bool { return engineLess(engines[i].Engine, engines[j].Engine) })
		md := Model{Name: name, Engines: engines}
		var mismatched []string
		md.Total, mismatched = sumStats(engines)
		for _, f := range mismatched {
			m.warn(fmt.Sprintf("model %q: %s bucket layouts differ between engines; no total", name, f))
		}
		md.Total.KVCacheUsage, md.KVCacheUsageBasis = combineKV(engines, capacity)
		m.snap.Models = append(m.snap.Models, md)
	}
	if counted := m.countedWarnings(); counted != nil {
		m.snap.Warnings = append(counted, m.snap.Warnings...)
	}
}

// sumStats adds up the engines of one model. Histograms whose layouts differ get no total;
// their names are returned.
func sumStats(engines []EngineStats) (Stats, []string) {
	var t Stats
	var mismatched []string
	for i := range engines {
		e := &engines[i].Stats
		for _, f := range summedFields {
			p := f(&t)
			*p = p.plus(*f(e))
		}
		t.WaitingByReason = addMaps(t.WaitingByReason, e.WaitingByReason)
		t.FinishedByReason = addMaps(t.FinishedByReason, e.FinishedByReason)
		// Awake for the total: 1 only when every engine is awake.
		if e.Awake.OK && (!t.Awake.OK || e.Awake.V < t.Awake.V) {
			t.Awake = e.Awake
		}
	}
	for _, f := range histFields {
		var acc *Histogram
		ok := true
		for i := range engines {
			if acc, ok = mergeHist(acc, *f.get(&engines[i].Stats)); !ok {
				break
			}
		}
		if !ok {
			mismatched = append(mismatched, f.name)
			acc = nil
		}
		*f.get(&t) = acc
	}
	return t, mismatched
}

func addMaps(dst, src map[string]float64) map[string]float64 {
	if src == nil {
		return dst
	}
	if dst == nil {
		dst = make(map[string]float64, len(src))
	}
	for k, v := range src {
		dst[k] += v
	}
	return dst
}

// combineKV makes one KV-cache usage from the engines': the engine's own when there is one,
// a capacity-weighted mean when every engine's capacity is known, else the fullest engine.
func combineKV(engines []EngineStats, capacity map[string]float64) (Value, string) {
	var present []EngineStats
	for _, e := range engines {
		if e.KVCacheUsage.OK {
			present = append(present, e)
		}
	}
	switch len(present) {
	case 0:
		return Value{}, ""
	case 1:
		if len(engines) == 1 {
			return present[0].KVCacheUsage, "engine"
		}
	}
	weighted := len(present) == len(engines)
	var used, total float64
	for _, e := range present {
		c, ok := capacity[e.Engine]
		if !ok {
			weighted = false
			break
		}
		used += e.KVCacheUsage.V * c
		total += c
	}
	if weighted && total > 0 {
		return Some(used / total), "capacity-weighted"
	}
	var v Value
	for _, e := range present {
		v = maxValue(v, e.KVCacheUsage)
	}
	return v, "max"
}

// capacityOf derives the server's capacity from the engines' cache config.
func capacityOf(cache []CacheConfig) Capacity {
	var c Capacity
	if len(cache) == 0 {
		return c
	}
	allTokens, allConc := true, true
	var tokens, conc Value
	for _, e := range cache {
		if e.KVCacheSizeTokens.OK {
			tokens = tokens.plus(e.KVCacheSizeTokens)
		} else {
			allTokens = false
		}
		if e.MaxConcurrency.OK {
			conc = conc.plus(e.MaxConcurrency)
		} else {
			allConc = false
		}
		c.BlockSizeTokens = maxValue(c.BlockSizeTokens, e.BlockSizeTokens)
		c.NumGPUBlocks = maxValue(c.NumGPUBlocks, e.NumGPUBlocks)
		c.GPUMemoryUtilization = maxValue(c.GPUMemoryUtilization, e.GPUMemoryUtilization)
	}
	if allTokens {
		c.KVCacheTokens = tokens
	} else if e := cache[0]; len(cache) == 1 && e.BlockSizeTokens.OK && e.NumGPUBlocks.OK && plainAttention(e.Labels) {
		if t := e.BlockSizeTokens.V * e.NumGPUBlocks.V; countOK(t) {
			c.KVCacheTokens = Some(t)
		}
	}
	if allConc {
		c.MaxConcurrency = conc
	}
	return c
}

// plainAttention reports whether blocks × block size is the token capacity: not for hybrid
// Mamba models (a mamba_block_size is set) or attention-free ones.
func plainAttention(labels map[string]string) bool {
	if v, ok := labels["mamba_block_size"]; ok && v != "None" {
		return false
	}
	return labels["is_attention_free"] != "True"
}

// rawFamily keeps a family no rule took, its strings sanitised and its values as they came.
func (m *mapper) rawFamily(mf *dto.MetricFamily, metrics []*dto.Metric) Family {
	f := Family{
		Name:   sanitize.Text(mf.GetName()),
		Type:   strings.ToLower(mf.GetType().String()),
		Help:   sanitize.Text(mf.GetHelp()),
		Series: make([]Series, 0, len(metrics)),
	}
	for _, metric := range metrics {
		var s Series
		if lps := metric.GetLabel(); len(lps) > 0 {
			s.Labels = make(map[string]string, len(lps))
			for _, lp := range lps {
				s.Labels[sanitize.Text(lp.GetName())] = sanitize.Text(lp.GetValue())
			}
		}
		switch {
		case metric.Histogram != nil:
			s.Histogram = m.histogram(mf.GetName(), metric)
		case metric.Summary != nil:
			ds := metric.GetSummary()
			sum := &Summary{Count: float64(ds.GetSampleCount()), Sum: ds.GetSampleSum()}
			for _, q := range ds.GetQuantile() {
				sum.Quantiles = append(sum.Quantiles, SummaryQuantile{Quantile: q.GetQuantile(), Value: q.GetValue()})
			}
			s.Summary = sum
		default:
			if v, ok := scalar(metric); ok {
				s.Value = Some(v)
			}
		}
		f.Series = append(f.Series, s)
	}
	return f
}

// summedFields are the Stats values that add up over engines (KVCacheUsage and Awake do not).
var summedFields = append([]func(*Stats) *Value{
	(*Stats).running, (*Stats).waiting,
	func(s *Stats) *Value { return &s.Swapped },
}, counterFields...)

// histFields lists every histogram of Stats with a short name for messages.
var histFields = []struct {
	name string
	get  func(*Stats) **Histogram
}{
	{"TTFT", (*Stats).ttft}, {"ITL", (*Stats).itl}, {"TPOT", (*Stats).tpot}, {"E2E", (*Stats).e2e},
	{"queue", (*Stats).queue}, {"prefill", (*Stats).prefill}, {"decode", (*Stats).decode},
	{"inference", (*Stats).inference}, {"prompt tokens", (*Stats).promptLen},
	{"generation tokens", (*Stats).genLen}, {"max tokens", (*Stats).maxTokens},
	{"max generation tokens", (*Stats).maxGen}, {"prefill KV computed tokens", (*Stats).prefillKV},
	{"iteration tokens", (*Stats).iteration}, {"n", (*Stats).paramsN},
}
