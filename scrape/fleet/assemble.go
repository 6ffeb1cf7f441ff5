package fleet

import (
	"sort"
	"strconv"
	"time"

	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// assemble judges rows: each row's own verdicts, then imbalance within each model's group
// (replicas and engines together), then the client's; and counts the endpoints up.
func assemble(source string, now time.Time, rows []Row, facts diagnose.Facts, th diagnose.Thresholds) Fleet {
	f := Fleet{Time: now, Source: source, Rows: rows}
	sort.SliceStable(f.Rows, func(i, j int) bool { return keyLess(f.Rows[i].Key, f.Rows[j].Key) })
	endpoints := map[string]bool{}
	up := map[string]bool{}
	byModel := map[string][]int{}
	for i := range f.Rows {
		r := &f.Rows[i]
		r.Subject = r.Name
		rf := facts
		if r.MaxNumSeqs > 0 { // the endpoint's own, from the fleet's config
			rf.MaxNumSeqs = r.MaxNumSeqs
		}
		r.Verdicts = diagnose.Evaluate(&r.Signals, rf, th)
		endpoints[r.Key.Endpoint] = true
		if r.State == StateUp || r.State == StateRestarted {
			up[r.Key.Endpoint] = true
		}
		if r.Model != "" {
			byModel[r.Model] = append(byModel[r.Model], i)
		}
	}
	for model, idx := range byModel {
		if len(idx) < 2 {
			continue
		}
		members := make([]diagnose.Signals, len(idx))
		servers := map[string]bool{}
		for k, i := range idx {
			members[k] = f.Rows[i].Signals
			servers[f.Rows[i].Key.Endpoint] = true
		}
		for _, v := range diagnose.Imbalance(groupName(len(idx), len(servers), model), members, th) {
			for _, i := range idx {
				if f.Rows[i].Name == v.Subject {
					f.Rows[i].Verdicts = append(f.Rows[i].Verdicts, v)
					diagnose.Sort(f.Rows[i].Verdicts)
				}
			}
		}
	}
	for i := range f.Rows {
		f.Verdicts = append(f.Verdicts, f.Rows[i].Verdicts...)
	}
	f.Verdicts = append(f.Verdicts, diagnose.Client(facts, th)...)
	diagnose.Sort(f.Verdicts)
	f.Up, f.Endpoints = len(up), len(endpoints)
	return f
}

// groupName says what a model's rows are: "3 replicas of M", "2 engines of M", or "4
// engines on 2 servers of M".
func groupName(rows, servers int, model string) string {
	switch {
	case servers == rows:
		return diagnose.GroupName(rows, "replicas", model)
	case servers == 1:
		return diagnose.GroupName(rows, "engines", model)
	}
	return diagnose.GroupName(rows, "engines on "+strconv.Itoa(servers)+" servers", model)
}

func keyLess(a, b Key) bool {
	if a.Endpoint != b.Endpoint {
		return a.Endpoint < b.Endpoint
	}
	if a.Model != b.Model {
		return a.Model < b.Model
	}
	ai, aerr := strconv.Atoi(a.Engine)
	bi, berr := strconv.Atoi(b.Engine)
	if aerr == nil && berr == nil {
		return ai < bi
	}
	return a.Engine < b.Engine
}

// rowName is the endpoint's name, with the engine when it has several.
func rowName(endpoint, engine string, engines int) string {
	if engines > 1 {
		return endpoint + " e" + engine
	}
	return endpoint
}
