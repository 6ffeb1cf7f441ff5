package scrape

import (
	"math"
	"sort"
	"time"
)

// Rate is a counter's increase per second from prev to cur, elapsed apart. It is absent when
// either value is absent or not finite, when elapsed is not positive, or when the counter went
// down: a counter only goes down when the server restarted, and the increase across a restart
// is unknown, so no rate is better than a negative one or a guess.
func Rate(prev, cur Value, elapsed time.Duration) Value {
	d, ok := increase(prev, cur)
	if !ok || elapsed <= 0 {
		return Value{}
	}
	return Some(d / elapsed.Seconds())
}

// increase is cur − prev for a counter; ok is false across a reset or with a value missing.
func increase(prev, cur Value) (float64, bool) {
	if !prev.OK || !cur.OK || !finite(prev.V) || !finite(cur.V) || cur.V < prev.V {
		return 0, false
	}
	return cur.V - prev.V, true
}

// Sub returns the observations cur gained since prev: bucket by bucket, count and sum. A nil
// prev means "since the server started" (cur itself). ok is false when cur is nil, the bucket
// layouts differ, or any count went down (the server restarted).
func Sub(prev, cur *Histogram) (*Histogram, bool) {
	if cur == nil {
		return nil, false
	}
	if prev == nil {
		return cur, true
	}
	if !sameLayout(prev, cur) || cur.Count < prev.Count {
		return nil, false
	}
	out := &Histogram{Buckets: make([]Bucket, len(cur.Buckets)), Count: cur.Count - prev.Count, Sum: cur.Sum - prev.Sum}
	for i, b := range cur.Buckets {
		d := b.Count - prev.Buckets[i].Count
		if d < 0 {
			return nil, false
		}
		out.Buckets[i] = Bucket{UpperBound: b.UpperBound, Count: d}
	}
	return out, true
}

// Quantile estimates the q-quantile (0 ≤ q ≤ 1) of the observations cur gained since prev
// (prev nil: since the server started), exactly as PromQL's histogram_quantile does over
// increase() of the buckets. It is absent when Sub fails, when the window has no
// observations, or when the histogram has no +Inf bucket or fewer than two buckets.
func Quantile(q float64, prev, cur *Histogram) Value {
	d, ok := Sub(prev, cur)
	if !ok {
		return Value{}
	}
	v, _ := bucketQuantile(q, d.Buckets)
	if math.IsNaN(v) {
		return Value{}
	}
	return Some(v)
}

// where a quantile's rank fell.
type rankPos int

const (
	inBucket rankPos = iota // between two finite bounds: interpolated
	inFirst                 // in the lowest bucket: interpolated from 0, so only "≤ its bound" is sure
	inInf                   // in the +Inf bucket: the highest finite bound, a lower limit
)

// bucketQuantile is histogram_quantile over cumulative buckets sorted by bound; pos says
// where the rank fell.
func bucketQuantile(q float64, buckets []Bucket) (v float64, pos rankPos) {
	switch {
	case math.IsNaN(q):
		return math.NaN(), inBucket
	case q < 0:
		return math.Inf(-1), inBucket
	case q > 1:
		return math.Inf(1), inBucket
	}
	n := len(buckets)
	if n == 0 || !math.IsInf(buckets[n-1].UpperBound, 1) {
		return math.NaN(), inBucket
	}
	// Equal bounds are merged and counts made monotonic, as PromQL does, without touching
	// the caller's slice unless something needs fixing.
	if needsRepair(buckets) {
		buckets = repair(buckets)
		n = len(buckets)
	}
	if n < 2 {
		return math.NaN(), inBucket
	}
	observations := buckets[n-1].Count
	if observations == 0 || math.IsNaN(observations) {
		return math.NaN(), inBucket
	}
	rank := q * observations
	b := sort.Search(n-1, func(i int) bool { return buckets[i].Count >= rank })
	if b == n-1 {
		return buckets[n-2].UpperBound, inInf
	}
	if b == 0 && buckets[0].UpperBound <= 0 {
		return buckets[0].UpperBound, inBucket
	}
	start, end, count := 0.0, buckets[b].UpperBound, buckets[b].Count
	pos = inFirst
	if b > 0 {
		start = buckets[b-1].UpperBound
		count -= buckets[b-1].Count
		rank -= buckets[b-1].Count
		pos = inBucket
	}
	return start + (end-start)*(rank/count), pos
}

func needsRepair(bs []Bucket) bool {
	for i := 1; i < len(bs); i++ {
		if bs[i].UpperBound == bs[i-1].UpperBound || bs[i].Count < bs[i-1].Count {
			return true
		}
	}
	return false
}

// repair merges buckets with equal bounds (adding their counts) and lifts any count below its
// predecessor up to it, in a copy.
func repair(in []Bucket) []Bucket {
	out := make([]Bucket, 0, len(in))
	for _, b := range in {
		if k := len(out); k > 0 && out[k-1].UpperBound == b.UpperBound {
			out[k-1].Count += b.Count
			continue
		}
		out = append(out, b)
	}
	for i := 1; i < len(out); i++ {
		if out[i].Count < out[i-1].Count {
			out[i].Count = out[i-1].Count
		}
	}
	return out
}

// PrefixCacheHitRate is the share (0..1) of prefix-cache lookups that hit, in tokens, between
// two readings of the same engine or model: Δhits / Δqueries. A nil prev gives the rate since
// the server started. It is absent when there were no lookups, a counter is missing, or a
// counter went down.
func PrefixCacheHitRate(prev, cur *Stats) Value {
	if cur == nil {
		return Value{}
	}
	var pq, ph Value
	if prev != nil {
		pq, ph = prev.PrefixCacheQueries, prev.PrefixCacheHits
	} else {
		pq, ph = Some(0), Some(0)
	}
	return ratio(ph, cur.PrefixCacheHits, pq, cur.PrefixCacheQueries)
}

// ratio is Δnum / Δden clamped to 0..1, absent when Δden is not positive.
func ratio(prevNum, curNum, prevDen, curDen Value) Value {
	dn, ok1 := increase(prevNum, curNum)
	dd, ok2 := increase(prevDen, curDen)
	if !ok1 || !ok2 || !(dd > 0) {
		return Value{}
	}
	return Some(math.Max(0, math.Min(1, dn/dd)))
}

// Dist summarises a histogram's observations over a window.
type Dist struct {
	Count float64 `json:"count"` // observations in the window
	Mean  Value   `json:"mean"`
	P50   Value   `json:"p50"`
	P90   Value   `json:"p90"`
	P99   Value   `json:"p99"`
	// Saturated names the quantiles ("p50", "p90", "p99") that fell in the +Inf bucket: their
	// value is the highest finite bucket bound, a lower limit rather than an estimate.
	Saturated []string `json:"saturated,omitempty"`
	// InFirstBucket names the quantiles that fell in the lowest bucket: their value is
	// interpolated from 0, so all that is sure is that it is at most FirstBound.
	InFirstBucket []string `json:"in_first_bucket,omitempty"`
	FirstBound    float64  `json:"first_bound"`
}

// Summarize describes the observations cur gained since prev (prev nil: since the server
// started). It is nil when Sub fails (histogram missing, layout changed, or a reset).
func Summarize(prev, cur *Histogram) *Dist {
	// The deltas go to a buffer on the stack (vLLM's histograms have up to about 20
	// buckets): a window over many series summarises many histograms.
	var buf [32]Bucket
	buckets, count, sum, ok := subInto(buf[:0], prev, cur)
	if !ok {
		return nil
	}
	out := &Dist{Count: count}
	if count > 0 {
		out.Mean = Some(sum / count)
	}
	if len(buckets) > 0 && finite(buckets[0].UpperBound) {
		out.FirstBound = buckets[0].UpperBound
	}
	for _, q := range []struct {
		q    float64
		name string
		dst  *Value
	}{{0.5, "p50", &out.P50}, {0.9, "p90", &out.P90}, {0.99, "p99", &out.P99}} {
		v, pos := bucketQuantile(q.q, buckets)
		if math.IsNaN(v) {
			continue
		}
		*q.dst = Some(v)
		switch pos {
		case inInf:
			out.Saturated = append(out.Saturated, q.name)
		case inFirst:
			out.InFirstBucket = append(out.InFirstBucket, q.name)
		case inBucket:
		}
	}
	return out
}

// subInto is Sub with the delta buckets appended to dst.
func subInto(dst []Bucket, prev, cur *Histogram) (buckets []Bucket, count, sum float64, ok bool) {
	switch {
	case cur == nil:
		return nil, 0, 0, false
	case prev == nil:
		return append(dst, cur.Buckets...), cur.Count, cur.Sum, true
	case !sameLayout(prev, cur) || cur.Count < prev.Count:
		return nil, 0, 0, false
	}
	for i, b := range cur.Buckets {
		d := b.Count - prev.Buckets[i].Count
		if d < 0 {
			return nil, 0, 0, false
		}
		dst = append(dst, Bucket{UpperBound: b.UpperBound, Count: d})
	}
	return dst, cur.Count - prev.Count, cur.Sum - prev.Sum, true
}

// Window is what a server did between two snapshots.
type Window struct {
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// Restarted is set when the server restarted between the snapshots (its process start
	// time changed, or a counter or histogram went down). Every rate and distribution is
	// then absent: the counts across a restart are unknown.
	Restarted bool `json:"restarted"`
	// SinceRestart is set on a window its maker shortened to begin after a restart, where the
	// span asked for reached back across it.
	SinceRestart bool          `json:"since_restart,omitempty"`
	Models       []ModelWindow `json:"models"`
}

// ModelWindow is one model's window: all engines together, and each engine.
type ModelWindow struct {
	Name    string        `json:"name"`
	Total   Rates         `json:"total"`
	Engines []EngineRates `json:"engines"`
}

// EngineRates is one engine's window.
type EngineRates struct {
	Engine string `json:"engine"`
	Rates
}

// Rates are per-second rates, ratios and distributions over a window. Absent values mean
// "unknown for this window" (missing metric, reset, no activity for a ratio).
type Rates struct {
	PromptTokensPerSec     Value `json:"prompt_tokens_per_sec"`
	GenerationTokensPerSec Value `json:"generation_tokens_per_sec"`
	RequestsPerSec         Value `json:"requests_per_sec"` // finished requests, any reason
	// FinishedByReason counts the requests that finished in the window, by reason.
	FinishedByReason   map[string]float64 `json:"finished_by_reason,omitempty"`
	Preemptions        Value              `json:"preemptions"`           // preemptions in the window
	PrefixCacheHitRate Value              `json:"prefix_cache_hit_rate"` // 0..1, tokens
	// SpecDecodeAcceptance is accepted ÷ proposed draft tokens (0..1).
	SpecDecodeAcceptance Value `json:"spec_decode_acceptance,omitzero"`
	// SpecDecodeMeanAcceptanceLength is 1 + accepted tokens ÷ drafts (specdecode.go).
	SpecDecodeMeanAcceptanceLength Value `json:"spec_decode_mean_acceptance_length,omitzero"`

	TTFTSeconds                *Dist `json:"ttft_seconds,omitempty"`
	ITLSeconds                 *Dist `json:"itl_seconds,omitempty"`
	TPOTSeconds                *Dist `json:"tpot_seconds,omitempty"`
	E2ESeconds                 *Dist `json:"e2e_seconds,omitempty"`
	QueueSeconds               *Dist `json:"queue_seconds,omitempty"`
	PrefillSeconds             *Dist `json:"prefill_seconds,omitempty"`
	DecodeSeconds              *Dist `json:"decode_seconds,omitempty"`
	PromptTokensPerRequest     *Dist `json:"prompt_tokens_per_request,omitempty"`
	GenerationTokensPerRequest *Dist `json:"generation_tokens_per_request,omitempty"`
}

// Compare computes what happened between prev and cur, two snapshots of the same server
// taken in that order; the elapsed time comes from their Time fields. Engines and models
// are matched by name; one present in only one snapshot gets nothing. The totals of a model
// come from its engines' own windows, so a reset on one engine cannot hide in a sum. Its cost
// is linear in the number of series: models and engines are matched through maps.
func Compare(prev, cur *Snapshot) Window { return compare(prev, cur, nil) }

// tally counts the steps compare takes (every model and engine visited or looked up), so a
// test can check that the cost stays linear without timing anything. A nil tally counts
// nothing.
type tally struct{ n int }

func (t *tally) step() {
	if t != nil {
		t.n++
	}
}

// snapIndex finds the models and engines of the earlier snapshot of a window by name. Two
// scrapes of one server list the same series in the same (sorted) order, so a look-up first
// tries the position the series had in the later snapshot; only when that misses does it
// build a map (once) and use it. Either way a look-up costs O(1).
type snapIndex struct {
	snap    *Snapshot
	work    *tally
	models  map[string]*Model
	engines map[seriesKey]*EngineStats
}

// model finds the model named name, which is at position i in the other snapshot.
func (x *snapIndex) model(i int, name string) (*Model, bool) {
	x.work.step()
	if i < len(x.snap.Models) && x.snap.Models[i].Name == name {
		return &x.snap.Models[i], true
	}
	x.build()
	m, ok := x.models[name]
	return m, ok
}

// engine finds engine e of model m (found by model), e being at position j in the other
// snapshot's model.
func (x *snapIndex) engine(m *Model, j int, e string) (*EngineStats, bool) {
	x.work.step()
	if j < len(m.Engines) && m.Engines[j].Engine == e {
		return &m.Engines[j], true
	}
	x.build()
	es, ok := x.engines[seriesKey{m.Name, e}]
	return es, ok
}

func (x *snapIndex) build() {
	if x.models != nil {
		return
	}
	s := x.snap
	n := 0
	for i := range s.Models {
		n += len(s.Models[i].Engines)
	}
	x.models = make(map[string]*Model, len(s.Models))
	x.engines = make(map[seriesKey]*EngineStats, n)
	for i := range s.Models {
		m := &s.Models[i]
		x.work.step()
		if _, dup := x.models[m.Name]; !dup {
			x.models[m.Name] = m
		}
		for j := range m.Engines {
			x.work.step()
			k := seriesKey{m.Name, m.Engines[j].Engine}
			if _, dup := x.engines[k]; !dup {
				x.engines[k] = &m.Engines[j]
			}
		}
	}
}

func compare(prev, cur *Snapshot, work *tally) Window {
	elapsed := cur.Time.Sub(prev.Time)
	w := Window{ElapsedSeconds: elapsed.Seconds()}
	if prev.ProcessStartSeconds.OK && cur.ProcessStartSeconds.OK && prev.ProcessStartSeconds.V != cur.ProcessStartSeconds.V {
		w.Restarted = true
	}
	idx := &snapIndex{snap: prev, work: work}
	if !w.Restarted {
		w.Restarted = anyReset(idx, cur, work)
	}
	if len(cur.Models) > 0 {
		w.Models = make([]ModelWindow, 0, len(cur.Models))
	}
	for i := range cur.Models {
		work.step()
		cm := &cur.Models[i]
		mw := ModelWindow{Name: cm.Name}
		if len(cm.Engines) > 0 {
			mw.Engines = make([]EngineRates, 0, len(cm.Engines))
		}
		pm, ok := idx.model(i, cm.Name)
		if !ok || w.Restarted || elapsed <= 0 {
			for _, e := range cm.Engines {
				work.step()
				mw.Engines = append(mw.Engines, EngineRates{Engine: e.Engine})
			}
			w.Models = append(w.Models, mw)
			continue
		}
		complete := len(pm.Engines) == len(cm.Engines)
		var prevs, curs []*Stats
		if len(cm.Engines) > 1 {
			prevs, curs = make([]*Stats, 0, len(cm.Engines)), make([]*Stats, 0, len(cm.Engines))
		}
		for j := range cm.Engines {
			work.step()
			ce := &cm.Engines[j]
			pe, ok := idx.engine(pm, j, ce.Engine)
			er := EngineRates{Engine: ce.Engine}
			if ok {
				er.Rates = rates(&pe.Stats, &ce.Stats, elapsed)
				if prevs != nil {
					prevs, curs = append(prevs, &pe.Stats), append(curs, &ce.Stats)
				}
			} else {
				complete = false
			}
			mw.Engines = append(mw.Engines, er)
		}
		switch {
		case !complete:
		case len(mw.Engines) == 1:
			// One engine's window is the model's: the same numbers, in copies of their own.
			mw.Total = cloneRates(mw.Engines[0].Rates)
		default:
			mw.Total = totalRates(prevs, curs, mw.Engines, elapsed, work)
		}
		w.Models = append(w.Models, mw)
	}
	return w
}

// cloneRates copies r with maps and distributions of its own.
func cloneRates(r Rates) Rates {
	if r.FinishedByReason != nil {
		r.FinishedByReason = addMaps(nil, r.FinishedByReason)
	}
	for _, d := range []**Dist{&r.TTFTSeconds, &r.ITLSeconds, &r.TPOTSeconds, &r.E2ESeconds, &r.QueueSeconds,
		&r.PrefillSeconds, &r.DecodeSeconds, &r.PromptTokensPerRequest, &r.GenerationTokensPerRequest} {
		if *d != nil {
			c := **d
			*d = &c
		}
	}
	return r
}

// rates is one engine's window.
func rates(p, c *Stats, elapsed time.Duration) Rates {
	r := Rates{
		PromptTokensPerSec:     Rate(p.PromptTokens, c.PromptTokens, elapsed),
		GenerationTokensPerSec: Rate(p.GenerationTokens, c.GenerationTokens, elapsed),
		RequestsPerSec:         Rate(p.RequestsFinished, c.RequestsFinished, elapsed),
		PrefixCacheHitRate:     PrefixCacheHitRate(p, c),
		SpecDecodeAcceptance:   ratio(p.SpecDecodeAcceptedTokens, c.SpecDecodeAcceptedTokens, p.SpecDecodeDraftTokens, c.SpecDecodeDraftTokens),
	}
	r.SpecDecodeMeanAcceptanceLength = SpecDecodeMeanAcceptanceLength(p, c)
	if d, ok := increase(p.Preemptions, c.Preemptions); ok {
		r.Preemptions = Some(d)
	}
	if c.FinishedByReason != nil {
		r.FinishedByReason = map[string]float64{}
		for k, v := range c.FinishedByReason {
			if d, ok := increase(Some(p.FinishedByReason[k]), Some(v)); ok {
				r.FinishedByReason[k] = d
			}
		}
	}
	r.TTFTSeconds = Summarize(p.TTFTSeconds, c.TTFTSeconds)
	r.ITLSeconds = Summarize(p.ITLSeconds, c.ITLSeconds)
	r.TPOTSeconds = Summarize(p.TPOTSeconds, c.TPOTSeconds)
	r.E2ESeconds = Summarize(p.E2ESeconds, c.E2ESeconds)
	r.QueueSeconds = Summarize(p.QueueSeconds, c.QueueSeconds)
	r.PrefillSeconds = Summarize(p.PrefillSeconds, c.PrefillSeconds)
	r.DecodeSeconds = Summarize(p.DecodeSeconds, c.DecodeSeconds)
	r.PromptTokensPerRequest = Summarize(p.PromptTokensPerRequest, c.PromptTokensPerRequest)
	r.GenerationTokensPerRequest = Summarize(p.GenerationTokensPerRequest, c.GenerationTokensPerRequest)
	return r
}

// totalRates combines the engines' windows of one model: rates add up (absent if any engine's
// is absent while its counter exists), ratios and distributions come from the summed deltas.
func totalRates(prevs, curs []*Stats, engines []EngineRates, elapsed time.Duration, work *tally) Rates {
	var t Rates
	sumRate := func(get func(*Rates) Value) Value {
		var v Value
		for i := range engines {
			work.step()
			r := get(&engines[i].Rates)
			if !r.OK {
				return Value{}
			}
			v = v.plus(r)
		}
		return v
	}
	t.PromptTokensPerSec = sumRate(func(r *Rates) Value { return r.PromptTokensPerSec })
	t.GenerationTokensPerSec = sumRate(func(r *Rates) Value { return r.GenerationTokensPerSec })
	t.RequestsPerSec = sumRate(func(r *Rates) Value { return r.RequestsPerSec })
	t.Preemptions = sumRate(func(r *Rates) Value { return r.Preemptions })
	for i := range engines {
		work.step()
		t.FinishedByReason = addMaps(t.FinishedByReason, engines[i].FinishedByReason)
	}

	// Ratios over the engines' summed increases.
	sumInc := func(get func(*Stats) Value) (Value, Value) {
		var d Value
		for i := range curs {
			work.step()
			x, ok := increase(get(prevs[i]), get(curs[i]))
			if !ok {
				return Value{}, Value{}
			}
			d = d.plus(Some(x))
		}
		return Some(0), d
	}
	h0, h1 := sumInc(func(s *Stats) Value { return s.PrefixCacheHits })
	q0, q1 := sumInc(func(s *Stats) Value { return s.PrefixCacheQueries })
	t.PrefixCacheHitRate = ratio(h0, h1, q0, q1)
	a0, a1 := sumInc(func(s *Stats) Value { return s.SpecDecodeAcceptedTokens })
	d0, d1 := sumInc(func(s *Stats) Value { return s.SpecDecodeDraftTokens })
	t.SpecDecodeAcceptance = ratio(a0, a1, d0, d1)
	t.SpecDecodeMeanAcceptanceLength = specDecodeTotal(prevs, curs)

	// Distributions over the engines' merged bucket deltas.
	dist := func(get func(*Stats) **Histogram) *Dist {
		var acc *Histogram
		for i := range curs {
			work.step()
			d, ok := Sub(*get(prevs[i]), *get(curs[i]))
			if !ok {
				return nil
			}
			if acc, ok = mergeHist(acc, d); !ok {
				return nil
			}
		}
		if acc == nil {
			return nil
		}
		return Summarize(nil, acc)
	}
	t.TTFTSeconds = dist((*Stats).ttft)
	t.ITLSeconds = dist((*Stats).itl)
	t.TPOTSeconds = dist((*Stats).tpot)
	t.E2ESeconds = dist((*Stats).e2e)
	t.QueueSeconds = dist((*Stats).queue)
	t.PrefillSeconds = dist((*Stats).prefill)
	t.DecodeSeconds = dist((*Stats).decode)
	t.PromptTokensPerRequest = dist((*Stats).promptLen)
	t.GenerationTokensPerRequest = dist((*Stats).genLen)
	return t
}

// anyReset reports whether any counter or histogram of any (model, engine) went down; prev
// is the earlier snapshot's index.
func anyReset(prev *snapIndex, cur *Snapshot, work *tally) bool {
	for i := range cur.Models {
		work.step()
		cm := &cur.Models[i]
		pm, ok := prev.model(i, cm.Name)
		if !ok {
			continue
		}
		for j := range cm.Engines {
			work.step()
			ce := &cm.Engines[j]
			pe, ok := prev.engine(pm, j, ce.Engine)
			if !ok {
				continue
			}
			if statsReset(&pe.Stats, &ce.Stats) {
				return true
			}
		}
	}
	return false
}

func statsReset(p, c *Stats) bool {
	for _, f := range counterFields {
		a, b := *f(p), *f(c)
		if a.OK && b.OK && b.V < a.V {
			return true
		}
	}
	for k, v := range p.FinishedByReason {
		if cv, ok := c.FinishedByReason[k]; ok && cv < v {
			return true
		}
	}
	for _, f := range histFields {
		a, b := *f.get(p), *f.get(c)
		if a != nil && b != nil && b.Count < a.Count {
			return true
		}
	}
	return false
}

// counterFields are the Stats values that are counters.
var counterFields = []func(*Stats) *Value{
	func(s *Stats) *Value { return &s.Preemptions },
	(*Stats).promptTokens, (*Stats).generationTokens,
	func(s *Stats) *Value { return &s.PromptTokensCached },
	func(s *Stats) *Value { return &s.PrefixCacheQueries },
	func(s *Stats) *Value { return &s.PrefixCacheHits },
	func(s *Stats) *Value { return &s.ExternalPrefixCacheQueries },
	func(s *Stats) *Value { return &s.ExternalPrefixCacheHits },
	(*Stats).finished,
	func(s *Stats) *Value { return &s.SpecDecodeDrafts },
	func(s *Stats) *Value { return &s.SpecDecodeDraftTokens },
	func(s *Stats) *Value { return &s.SpecDecodeAcceptedTokens },
}
