package loadgen

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vllmtop/vllmtop/internal/base/outfile"
	"github.com/vllmtop/vllmtop/internal/base/sanitize"
)

// String writes the float as Python's repr does (1.0, 0.9, 1e-05).
func (f PyFloat) String() string { return pyRepr(float64(f)) }

// Set returns d with key set to value: in place where d has the key (as a Python dict update
// keeps the key's place), appended otherwise.
func (d ResultDoc) Set(key string, value any) ResultDoc {
	for i := range d {
		if d[i].Key == key {
			out := append(ResultDoc(nil), d...)
			out[i].Value = value
			return out
		}
	}
	return append(append(ResultDoc(nil), d...), Field{key, value})
}

// WriteSummaryCSV writes records as vllm bench sweep writes summary.csv (pandas' to_csv of the
// records): an unnamed index column, then every key in the order first seen; a record without
// a key leaves its cell empty. Numbers are written as Python writes them, None as nothing.
func WriteSummaryCSV(w io.Writer, records []ResultDoc) error {
	var cols []string
	seen := map[string]bool{}
	for _, r := range records {
		for _, f := range r {
			if !seen[f.Key] {
				seen[f.Key] = true
				cols = append(cols, f.Key)
			}
		}
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(append([]string{""}, cols...)); err != nil {
		return err
	}
	for i, r := range records {
		row := make([]string, 0, len(cols)+1)
		row = append(row, strconv.Itoa(i))
		for _, c := range cols {
			v, ok := lastValue(r, c)
			if !ok {
				row = append(row, "")
				continue
			}
			row = append(row, pyCell(v))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// lastValue is key's value as MarshalJSON writes it: the last one given.
func lastValue(d ResultDoc, key string) (any, bool) {
	var v any
	found := false
	for _, f := range d {
		if f.Key == key {
			v, found = f.Value, true
		}
	}
	return v, found
}

// pyCell writes one value as pandas writes a cell: Python's repr of numbers, strings as they
// are, None empty, dicts and lists as Python prints them.
func pyCell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case PyFloat:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return ""
		}
		return pyRepr(float64(x))
	case float64:
		return pyRepr(x)
	case int:
		return strconv.Itoa(x)
	case bool:
		if x {
			return "True"
		}
		return "False"
	case map[string]int:
		keys := slices.Sorted(maps.Keys(x))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("'%s': %d", k, x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// SaveSummaryCSV writes records to dir/summary.csv and returns its path.
func SaveSummaryCSV(dir string, records []ResultDoc) (string, error) {
	path := filepath.Join(dir, "summary.csv")
	f, err := outfile.Create(path, ownFile)
	if err != nil {
		return "", err
	}
	err = WriteSummaryCSV(f, records)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return path, err
}

// ownFile is how the files of a search's or a sweep's layout are written: the command checked
// before its run that their directory holds nothing of the user's (or that --overwrite lets it
// be replaced), and rewrites them as it goes (a resumed sweep, the probes of two searches), but
// never through a link.
var ownFile = outfile.Options{Mode: outfile.Overwrite}

// SaveJSON writes v indented to path, creating its directory.
func SaveJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	return outfile.WriteFile(path, append(b, '\n'), ownFile)
}

// SanitizeFilename makes a name safe as one path element as vLLM's sweep does ("/" becomes "_",
// ".." becomes "__", so its layout's names stay vLLM's: "SLA--p99_ttft_ms<=500.00.json"), after
// the sanitiser has taken out what a terminal would act on.
func SanitizeFilename(name string) string {
	name = strings.ReplaceAll(strings.ReplaceAll(sanitize.Text(name), "/", "_"), "..", "__")
	if name == "" || name == "." {
		return "_"
	}
	return name
}

// SLOIterDir is where one probe's runs go under base: "max_concurrency=48".
func SLOIterDir(base, variable string, value int) string {
	return filepath.Join(base, variable+"="+strconv.Itoa(value))
}

// RunPath is one run's file in a probe's (or a combination's) directory: "run=0.json".
func RunPath(dir string, run int) string { return filepath.Join(dir, "run="+strconv.Itoa(run)+".json") }

// SaveSLOProbe writes a probe's runs as vLLM's serve_sla lays them out under base:
// VARIABLE=VALUE/run=N.json each, and VARIABLE=VALUE/summary.json, the list.
func SaveSLOProbe(base, variable string, p SLOProbe) error {
	dir := SLOIterDir(base, variable, p.Value)
	for i, d := range p.Docs {
		if err := SaveJSON(RunPath(dir, i), d); err != nil {
			return err
		}
	}
	return SaveJSON(filepath.Join(dir, "summary.json"), p.Docs)
}

// SaveSLOResult writes the search's records as base/SLA--CRITERIA.json (every probe's runs, in
// the order they ran), as vLLM does, and returns them.
func SaveSLOResult(base string, s SLOSearch, r SLOResult) ([]ResultDoc, error) {
	var all []ResultDoc
	for _, p := range r.Probes {
		all = append(all, p.Docs...)
	}
	if all == nil {
		all = []ResultDoc{}
	}
	path := filepath.Join(base, SanitizeFilename("SLA--"+s.SLO.Text("-")+".json"))
	return all, SaveJSON(path, all)
}
