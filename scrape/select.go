package scrape

import (
	"bytes"
	"io"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Selection is the families a selective parse keeps (ParseSelected). A caller that reads a
// few fields of many servers (a fleet) parses only those: the text parser's cost is per
// line, and a vLLM exposition is about 650 lines of which a fleet row reads about 100.
type Selection struct {
	keep map[string]bool
	// sumsOnly are histograms of which only the count and sum are read (for a mean): their
	// finite buckets are skipped, their +Inf bucket kept (it is the count when _count is
	// missing).
	sumsOnly map[string]bool
	// suffixedKept: some family kept is named like a histogram's series (x_count), so a
	// left-out family's x_count may be kept; the filter's fast path is then off.
	suffixedKept bool
}

// NewSelection keeps the families named (by their family name: a histogram's, not its
// _bucket series'); those in sumsOnly are kept without their finite buckets.
func NewSelection(families, sumsOnly []string) *Selection {
	s := &Selection{keep: map[string]bool{}, sumsOnly: map[string]bool{}}
	for _, f := range families {
		s.keep[f] = true
	}
	for _, f := range sumsOnly {
		s.keep[f], s.sumsOnly[f] = true, true
	}
	for f := range s.keep {
		if base, _ := splitSuffix([]byte(f)); base != nil {
			s.suffixedKept = true
		}
	}
	return s
}

// Families lists the families kept, sorted.
func (s *Selection) Families() []string {
	out := make([]string, 0, len(s.keep))
	for f := range s.keep {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// ParseSelected is Parse of body with every family outside sel left out, and sel's
// sums-only histograms without their finite buckets: the mapped fields of the families kept
// are the same as Parse gives, except that of a sums-only histogram only each series' count
// and sum are (its first bucket and +Inf are kept, the others not, so a model's total of it
// may be missing where Parse merges the engines' layouts), and the rest is absent. It never turns a body Parse refuses into
// one it accepts: every line left out is checked by a strict lexer first, and anything it is
// not sure of (or a body from which nothing is kept) is parsed whole. A refused body is
// parsed whole too, so the error is Parse's own, line number included. body is not modified.
func ParseSelected(body []byte, sel *Selection) (Snapshot, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return Snapshot{}, ErrEmptyBody
	}
	bp := selectBufs.Get().(*selectBuf)
	defer selectBufs.Put(bp)
	kept, ok := sel.filter(bp, body)
	if ok {
		p := parsers.Get().(*expfmt.TextParser)
		fams, err := p.TextToMetricFamilies(io.MultiReader(bytes.NewReader(kept), strings.NewReader("\n")))
		parsers.Put(p)
		if err == nil {
			snap := FromFamilies(fams)
			// A family left out still names the backend, as it does for Parse.
			snap.Backend = earlierBackend(snap.Backend, bp.backend)
			return snap, nil
		}
	}
	return Parse(bytes.NewReader(body)) // whole, on a copy: parseBytes works in place
}

type selectBuf struct {
	out     []byte
	keys    [][]byte
	backend Backend // the backend the left-out families name
}

// leftOut records the name of a family left out (and its base: x_count may be the parser's
// x), and the backend it names.
func (bp *selectBuf) leftOut(keys [][]byte, name []byte) [][]byte {
	if name == nil {
		return keys
	}
	bp.backend = earlierBackend(bp.backend, backendOf(string(name)))
	keys = append(keys, name)
	if base, _ := splitSuffix(name); base != nil {
		keys = append(keys, base)
	}
	return keys
}

// earlierBackend is the backend Parse would pick of two: the known one, or the lower.
func earlierBackend(a, b Backend) Backend {
	if a == BackendUnknown || (b != BackendUnknown && b < a) {
		return b
	}
	return a
}

var (
	selectBufs = sync.Pool{New: func() any { return &selectBuf{} }}
	parsers    = sync.Pool{New: func() any { p := expfmt.NewTextParser(model.UTF8Validation); return &p }}
)

// filter copies the kept lines of body into bp.out. ok is false when body must be parsed
// whole: a line left out that the lexer does not vouch for, a family left out that is
// not contiguous, or nothing kept.
func (s *Selection) filter(bp *selectBuf, body []byte) (kept []byte, ok bool) {
	out := bp.out[:0]
	keys := bp.keys[:0]
	bp.backend = BackendUnknown
	defer func() { clear(keys); bp.out, bp.keys = out[:0], keys[:0] }()
	var block dropBlock
	var prevBefore, prevAfter []byte // the last line, a sums-only bucket, around its le label
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line = body[:i+1]
		}
		body = body[len(line):]
		if block.fastSample(line, s) {
			prevBefore, prevAfter = nil, nil
			continue
		}
		act := s.lineAction(line)
		if act != skipBucket {
			prevBefore, prevAfter = nil, nil
		}
		switch act {
		case parseWhole:
			return nil, false
		case keepIt:
			block = dropBlock{}
			if rest, ok := bytes.CutPrefix(line, []byte("# HELP ")); ok {
				// No field holds a kept family's help: checked (once per family, as the
				// parser wants), left out.
				name := metricName(rest)
				if !helpOK(rest[len(name):]) {
					return nil, false
				}
				if base, _ := splitSuffix(name); base != nil {
					name = base // the parser gives x_count's help to x, if x is a histogram
				}
				keys = append(keys, name)
				continue
			}
			out = append(out, line...)
		case skipBucket:
			// The first bucket of each series is kept, so every series the parser would
			// see is there (a series may have nothing else); the rest are checked, left out.
			before, after := cutLe(line)
			if bytes.Equal(before, prevBefore) && bytes.Equal(after, prevAfter) {
				name := metricName(line)
				if !sampleOK(line[len(name):], "histogram", "_bucket") {
					return nil, false
				}
				continue
			}
			out = append(out, line...)
			block = dropBlock{}
			prevBefore, prevAfter = before, after
			continue
		case leaveOut:
			newKey, good := block.next(line, s)
			if !good {
				return nil, false
			}
			keys = bp.leftOut(keys, newKey)
		}
	}
	if len(out) == 0 {
		return nil, false
	}
	// A family left out in two places may be one the parser refuses (a second TYPE line).
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 })
	for i := 1; i < len(keys); i++ {
		if bytes.Equal(keys[i-1], keys[i]) {
			return nil, false
		}
	}
	return out, true
}

// What the filter does with a line.
type action int

const (
	leaveOut   action = iota // a family not kept: checked, then left out
	keepIt                   // a kept family's line, for the parser
	skipBucket               // a sums-only histogram's finite bucket: checked, then left out
	parseWhole               // unusual enough that only the parser should judge the body
)

// lineAction decides for one line. Lines unusual enough that the filter might read them
// otherwise than the parser (blanks before a name, "#HELP") make the body parsed whole.
func (s *Selection) lineAction(line []byte) action {
	if line[0] == '\n' {
		return leaveOut
	}
	if line[0] == '#' {
		rest, isMeta := cutMeta(line)
		if !isMeta {
			if plainCommentLooksMeta(line) {
				return parseWhole
			}
			return leaveOut
		}
		name := metricName(rest)
		if len(name) == 0 {
			return parseWhole
		}
		return s.nameAction(name, nil)
	}
	name := metricName(line)
	if len(name) == 0 {
		return parseWhole
	}
	return s.nameAction(name, line[len(name):])
}

// nameAction: a kept family's lines, or its _bucket, _sum or _count, are kept; a sums-only
// family's bucket only for +Inf or a bound the lexer does not vouch for.
func (s *Selection) nameAction(name, afterName []byte) action {
	if s.keep[string(name)] {
		return keepIt
	}
	base, suffix := splitSuffix(name)
	if base == nil || !s.keep[string(base)] {
		return leaveOut
	}
	if suffix != "_bucket" || !s.sumsOnly[string(base)] || afterName == nil {
		return keepIt
	}
	le, ok := labelValue(afterName, "le")
	if !ok {
		return keepIt
	}
	if _, finite := strictFloat(le); !finite {
		return keepIt
	}
	return skipBucket
}

func splitSuffix(name []byte) (base []byte, suffix string) {
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if bytes.HasSuffix(name, []byte(suf)) {
			return name[:len(name)-len(suf)], suf
		}
	}
	return nil, ""
}

// cutMeta returns what follows "# HELP " or "# TYPE ", in exactly that spelling.
func cutMeta(line []byte) ([]byte, bool) {
	if rest, ok := bytes.CutPrefix(line, []byte("# HELP ")); ok {
		return rest, true
	}
	if rest, ok := bytes.CutPrefix(line, []byte("# TYPE ")); ok {
		return rest, true
	}
	return nil, false
}

// plainCommentLooksMeta: the parser reads "#HELP", "#  TYPE" and the like as HELP and TYPE
// lines; such a line is left to it.
func plainCommentLooksMeta(line []byte) bool {
	rest := bytes.TrimLeft(line[1:], " \t")
	return bytes.HasPrefix(rest, []byte("HELP")) || bytes.HasPrefix(rest, []byte("TYPE"))
}

// metricName is the legacy-charset name at the start of b, if what follows it is a blank,
// '{' or the end of the line; nil otherwise.
func metricName(b []byte) []byte {
	i := 0
	for i < len(b) && nameByte(b[i], i == 0, true) {
		i++
	}
	if i == 0 || i == len(b) {
		return nil
	}
	switch b[i] {
	case ' ', '{', '\n':
		return b[:i]
	}
	return nil
}

func nameByte(c byte, first, colon bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		return true
	case c == ':':
		return colon
	case c >= '0' && c <= '9':
		return !first
	}
	return false
}

// cutLe splits a bucket line around its le="..." pair (which labelValue found plain).
func cutLe(line []byte) (before, after []byte) {
	i := bytes.Index(line, []byte(`le="`))
	for i > 0 && line[i-1] != '{' && line[i-1] != ',' {
		j := bytes.Index(line[i+1:], []byte(`le="`))
		if j < 0 {
			return line, nil
		}
		i += 1 + j
	}
	if i < 0 {
		return line, nil
	}
	end := i + 4 + bytes.IndexByte(line[i+4:], '"') + 1
	return line[:i], line[end:bytes.IndexByte(line, '}')]
}

// labelValue finds name="value" in a sample line's label set (b starts after the name); ok
// only when the label set is plain enough to find it without the parser.
func labelValue(b []byte, name string) ([]byte, bool) {
	if len(b) == 0 || b[0] != '{' {
		return nil, false
	}
	end := bytes.IndexByte(b, '}')
	if end < 0 || bytes.IndexByte(b[:end], '\\') >= 0 {
		return nil, false
	}
	for _, pair := range bytes.Split(b[1:end], []byte(",")) {
		if v, ok := bytes.CutPrefix(pair, []byte(name+`="`)); ok && len(v) > 0 && v[len(v)-1] == '"' {
			return v[:len(v)-1], true
		}
	}
	return nil, false
}

// dropBlock follows the family whose lines are being left out, to check them as the parser
// would: HELP and TYPE at most once each and before the samples, sample names that fit the
// type, histogram counts not negative, bounds and quantiles numbers.
type dropBlock struct {
	key             []byte
	typ             string
	help, typed, in bool // seen HELP, TYPE, a sample
	baseKept        bool // key less a _bucket, _sum or _count suffix is kept (see nearKept)
}

func newDropBlock(key []byte, s *Selection) dropBlock {
	base, _ := splitSuffix(key)
	return dropBlock{key: key, baseKept: base != nil && s.keep[string(base)]}
}

// fastSample checks a sample line of the family being left out without looking its name up
// again: most of a body is the buckets of histograms left out. It reports whether it took
// the line (checked and good); any doubt goes to the slow path.
func (b *dropBlock) fastSample(line []byte, s *Selection) bool {
	if b.key == nil || line[0] == '#' || s.suffixedKept {
		return false
	}
	rest, ok := bytes.CutPrefix(line, b.key)
	if !ok || len(rest) == 0 {
		return false
	}
	suffix := ""
	switch rest[0] {
	case '{', ' ':
		if b.typ == "histogram" {
			return false
		}
	case '_':
		if b.typ != "histogram" && b.typ != "summary" || b.baseKept {
			return false
		}
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if r, ok := bytes.CutPrefix(rest, []byte(suf)); ok && len(r) > 0 && (r[0] == '{' || r[0] == ' ') {
				suffix, rest = suf, r
				break
			}
		}
		if suffix == "" || suffix == "_bucket" && b.typ == "summary" {
			return false
		}
	default:
		return false
	}
	if !sampleOK(rest, b.typ, suffix) {
		return false // the slow path decides, and refuses it too
	}
	b.in = true
	return true
}

// next checks one line left out. newKey is set when it starts another family.
func (b *dropBlock) next(line []byte, s *Selection) (newKey []byte, ok bool) {
	if line[0] == '\n' {
		return nil, true
	}
	if line[0] == '#' {
		rest, isMeta := cutMeta(line)
		if !isMeta {
			return nil, true // a comment (lineAction ruled out one the parser reads as HELP/TYPE)
		}
		name := metricName(rest)
		if s.nearKept(name) {
			return nil, false
		}
		after := rest[len(name):]
		if !bytes.Equal(name, b.key) {
			*b = newDropBlock(name, s)
			newKey = name
		}
		if line[2] == 'H' {
			if b.help || !helpOK(after) {
				return nil, false
			}
			b.help = true
			return newKey, true
		}
		typ, good := typeOK(after)
		if b.typed || b.in || !good {
			return nil, false
		}
		b.typed, b.typ = true, typ
		return newKey, true
	}
	name := metricName(line)
	if s.nearKept(name) {
		return nil, false
	}
	base, suffix := splitSuffix(name)
	switch {
	case bytes.Equal(name, b.key) && (b.typ == "" || b.typ == "counter" || b.typ == "gauge" || b.typ == "untyped" || b.typ == "summary"):
	case base != nil && bytes.Equal(base, b.key) && (b.typ == "histogram" || b.typ == "summary" && suffix != "_bucket"):
	default:
		if b.typ == "histogram" || b.typ == "summary" {
			if base != nil && bytes.Equal(base, b.key) || bytes.Equal(name, b.key) {
				return nil, false // a name the parser may read otherwise
			}
		}
		*b = newDropBlock(name, s)
		newKey = name
	}
	if !sampleOK(line[len(name):], b.typ, suffix) {
		return nil, false
	}
	b.in = true
	return newKey, true
}

// nearKept: a name left out whose family the parser might merge with a kept one
// ("x_count_count" when x is kept and "x_count" a summary).
func (s *Selection) nearKept(name []byte) bool {
	base, _ := splitSuffix(name)
	if base == nil {
		return false
	}
	base2, _ := splitSuffix(base)
	return base2 != nil && s.keep[string(base2)]
}

// helpOK: " text\n" or "\n", the text valid UTF-8 with only \\ and \n escaped.
func helpOK(b []byte) bool {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return false
	}
	b = b[:len(b)-1]
	if len(b) == 0 {
		return true
	}
	if b[0] != ' ' || !utf8.Valid(b) || bytes.IndexByte(b, '\r') >= 0 {
		return false
	}
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' {
			if i+1 >= len(b) || (b[i+1] != '\\' && b[i+1] != 'n') {
				return false
			}
			i++
		}
	}
	return true
}

// typeOK: " type\n" with one of the five types in lower case.
func typeOK(b []byte) (string, bool) {
	switch string(b) {
	case " counter\n", " gauge\n", " histogram\n", " summary\n", " untyped\n":
		return string(b[1 : len(b)-1]), true
	}
	return "", false
}

// sampleOK checks what follows a sample's name: an optional plain label set, one blank, a
// number, optionally one blank and an integer timestamp, the end of the line.
func sampleOK(b []byte, typ, suffix string) bool {
	var sl specialLabels
	if len(b) > 0 && b[0] == '{' {
		var ok bool
		if b, sl, ok = labelSetOK(b); !ok {
			return false
		}
	}
	// The parser reads le in a histogram's lines and quantile in a summary's as numbers.
	switch typ {
	case "histogram":
		if sl.hasLe && !bound(sl.le) || suffix == "_bucket" && !sl.hasLe {
			return false
		}
	case "summary":
		if sl.hasQuantile && !bound(sl.quantile) || suffix == "" && !sl.hasQuantile {
			return false
		}
	}
	return valueOK(b, typ, suffix)
}

// specialLabels are a sample's le and quantile label values.
type specialLabels struct {
	le, quantile       []byte
	hasLe, hasQuantile bool
}

// labelSetOK checks the label set that opens b: at least one label, distinct names other
// than __name__, quoted UTF-8 values with no escapes but \\, \" and \n. It returns what
// follows the set.
func labelSetOK(b []byte) (rest []byte, sl specialLabels, ok bool) {
	var names [64][]byte
	n := 0
	i := 1
	for {
		if i < len(b) && b[i] == '}' && n > 0 {
			i++
			break
		}
		j := i
		for j < len(b) && nameByte(b[j], j == i, false) {
			j++
		}
		if j == i || j+1 >= len(b) || b[j] != '=' || b[j+1] != '"' || n == len(names) {
			return nil, sl, false
		}
		name := b[i:j]
		if string(name) == model.MetricNameLabel {
			return nil, sl, false
		}
		for _, prev := range names[:n] {
			if bytes.Equal(prev, name) {
				return nil, sl, false
			}
		}
		names[n] = name
		n++
		k, ok := closingQuote(b, j+2)
		if !ok {
			return nil, sl, false
		}
		value := b[j+2 : k]
		if !utf8.Valid(value) {
			return nil, sl, false
		}
		switch string(name) {
		case "le":
			sl.le, sl.hasLe = value, true
		case "quantile":
			sl.quantile, sl.hasQuantile = value, true
		}
		i = k + 1
		if i < len(b) && b[i] == ',' {
			i++
		} else if i >= len(b) || b[i] != '}' {
			return nil, sl, false
		}
	}
	return b[i:], sl, true
}

// closingQuote is the index of the quote that ends the label value starting at k, which may
// hold only the escapes \\, \" and \n and no newline.
func closingQuote(b []byte, k int) (int, bool) {
	if q := bytes.IndexByte(b[k:], '"'); q >= 0 && bytes.IndexByte(b[k:k+q], '\\') < 0 {
		k += q // no escapes: the first quote ends the value
	}
	for k < len(b) && b[k] != '"' {
		switch b[k] {
		case '\\':
			if k+1 >= len(b) || (b[k+1] != '\\' && b[k+1] != '"' && b[k+1] != 'n') {
				return 0, false
			}
			k++
		case '\n':
			return 0, false
		}
		k++
	}
	return k, k < len(b)
}

// valueOK checks what follows the labels: one blank, a number (not negative in a histogram's
// bucket and count lines), optionally one blank and a timestamp, the end of the line.
func valueOK(b []byte, typ, suffix string) bool {
	if len(b) < 3 || b[0] != ' ' {
		return false
	}
	b = b[1:]
	sp := bytes.IndexByte(b, ' ')
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		nl = len(b) // the last line, without its newline
	} else if nl != len(b)-1 {
		return false
	}
	end := nl
	if sp >= 0 && sp < nl {
		end = sp
	}
	v, _ := strictFloat(b[:end])
	if !v {
		return false
	}
	if typ == "histogram" && (suffix == "_bucket" || suffix == "_count") && b[0] == '-' {
		return false
	}
	return end == nl || timestampOK(b[end+1:nl])
}

// timestampOK: an integer of at most 18 digits, optionally negative.
func timestampOK(ts []byte) bool {
	if len(ts) > 0 && ts[0] == '-' {
		ts = ts[1:]
	}
	if len(ts) == 0 || len(ts) > 18 {
		return false
	}
	for _, c := range ts {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// bound is a label value the parser reads as a float (le, quantile).
func bound(v []byte) bool {
	ok, _ := strictFloat(v)
	return ok
}

// strictFloat: b is a number the parser surely reads (ok), and whether it is finite. Only
// plain decimals (at most 40 digits, an exponent of at most 3 digits, nothing near float64's
// range) and ±Inf and NaN in their usual spelling are vouched for: no hex, no '_'.
func strictFloat(b []byte) (ok, finite bool) {
	switch string(b) {
	case "+Inf", "-Inf", "Inf", "NaN":
		return true, false
	}
	i := 0
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		i++
	}
	digits, intDigits, dot := 0, 0, false
	for ; i < len(b); i++ {
		c := b[i]
		if c == '.' && !dot {
			dot = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		digits++
		if !dot {
			intDigits++
		}
	}
	if digits == 0 || digits > 40 {
		return false, false
	}
	if i == len(b) {
		return intDigits <= 300, true
	}
	if b[i] != 'e' && b[i] != 'E' {
		return false, false
	}
	i++
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	e := b[i:]
	if len(e) == 0 || len(e) > 3 {
		return false, false
	}
	exp := 0
	for _, c := range e {
		if c < '0' || c > '9' {
			return false, false
		}
		exp = exp*10 + int(c-'0')
	}
	if neg {
		exp = -exp
	}
	return exp >= -300 && intDigits+exp <= 300, true
}
