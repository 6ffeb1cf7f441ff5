package sweepcli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Record is one run of a sweep's results, as vllm bench sweep plot reads them: a summary.json
// item, numbers as json.Number.
type Record map[string]any

// LoadRecords reads every summary.json under dir (at any depth), as vLLM's plot commands do.
func LoadRecords(dir string) ([]Record, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("no parameter sweep results under %s", dir)
	}
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "summary.json" {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []Record
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var recs []Record
		if err := dec.Decode(&recs); err != nil {
			return nil, fmt.Errorf("%s: %v", p, err)
		}
		out = append(out, recs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("did not find any parameter sweep results under %s", dir)
	}
	return out, nil
}

// Num is a record's value as a number: JSON numbers, and "inf", "-inf", "nan" (how a result
// file writes them), as vLLM's plot reads them.
func (r Record) Num(key string) (float64, bool) {
	switch v := r[key].(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// Str is a record's value as Python's str() writes it (a missing key is "nan", as pandas fills
// a column a run lacks).
func (r Record) Str(key string) string {
	v, ok := r[key]
	if !ok {
		return "nan"
	}
	return pyStr(v)
}

// group is a record's values of keys, as "k=v" pairs.
func group(r Record, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + r.Str(k)
	}
	return out
}

// groupBy splits records by their values of keys, groups in the order they first appear.
func groupBy(recs []Record, keys []string) (names [][]string, groups [][]Record) {
	at := map[string]int{}
	for _, r := range recs {
		g := group(r, keys)
		k := strings.Join(g, "\x00")
		i, ok := at[k]
		if !ok {
			i = len(names)
			at[k] = i
			names, groups = append(names, g), append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	return names, groups
}

// Filter is one --filter-by statement: VAR OP VALUE.
type Filter struct{ Var, Op, Target string }

// filterOps in the order vLLM tries them: the two-character ones first.
var filterOps = []string{"==", "!=", "<=", ">=", "<", ">"}

// ParseFilters reads --filter-by: "max_concurrency<1000,max_num_batched_tokens<=4096".
func ParseFilters(s string) ([]Filter, error) {
	if s == "" {
		return nil, nil
	}
	var out []Filter
	for _, e := range strings.Split(s, ",") {
		var f *Filter
		for _, op := range filterOps {
			if k, v, ok := strings.Cut(e, op); ok {
				f = &Filter{Var: k, Op: op, Target: strings.Trim(strings.Trim(v, "'"), `"`)}
				break
			}
		}
		if f == nil {
			return nil, fmt.Errorf("invalid operator for plot filter %q: valid operators are != < <= == > >=", e)
		}
		if _, err := strconv.ParseFloat(f.Target, 64); err != nil && f.Op != "==" && f.Op != "!=" {
			return nil, fmt.Errorf("plot filter %q: %q is not a number", e, f.Target)
		}
		out = append(out, *f)
	}
	return out, nil
}

// keep reports whether r passes the filter.
func (f Filter) keep(r Record) bool {
	t, numErr := strconv.ParseFloat(f.Target, 64)
	v, isNum := r.Num(f.Var)
	if f.Op == "==" || f.Op == "!=" {
		eq := r.Str(f.Var) == f.Target
		if numErr == nil && isNum {
			eq = v == t
		}
		return eq == (f.Op == "==")
	}
	if !isNum {
		return false
	}
	switch f.Op {
	case "<":
		return v < t
	case "<=":
		return v <= t
	case ">":
		return v > t
	}
	return v >= t
}

// Binner is one --bin-by statement: VAR%SIZE rounds VAR down to a multiple of SIZE.
type Binner struct {
	Var  string
	Size float64
}

// ParseBinners reads --bin-by: "request_throughput%1".
func ParseBinners(s string) ([]Binner, error) {
	if s == "" {
		return nil, nil
	}
	var out []Binner
	for _, e := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(e, "%")
		size, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || size <= 0 {
			return nil, errors.New("invalid plot binner " + strconv.Quote(e) + ": want VAR%SIZE")
		}
		out = append(out, Binner{Var: k, Size: size})
	}
	return out, nil
}

// filterAndBin applies the filters, then the binners, to copies of the records.
func filterAndBin(recs []Record, filters []Filter, bins []Binner) []Record {
	var out []Record
next:
	for _, r := range recs {
		for _, f := range filters {
			if !f.keep(r) {
				continue next
			}
		}
		c := Record{}
		for k, v := range r {
			c[k] = v
		}
		for _, b := range bins {
			if v, ok := c.Num(b.Var); ok {
				c[b.Var] = json.Number(strconv.FormatFloat(math.Floor(v/b.Size)*b.Size, 'g', -1, 64))
			}
		}
		out = append(out, c)
	}
	return out
}
