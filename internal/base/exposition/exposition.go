// Package exposition edits Prometheus text expositions line by line, so tests can turn one
// real capture into a pair (before, after) that differs only where the test says: a gauge
// set, a counter advanced, observations added to a histogram. Nothing here parses the format
// beyond a sample line's name, labels and value.
package exposition

import (
	"math"
	"strconv"
	"strings"
)

// Edit rewrites the value of every sample of metric whose labels contain every one of match
// (each a `key="value"` piece; none means every series).
func Edit(body, metric string, f func(float64) float64, match ...string) string {
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		name, labels, val, ok := split(l)
		if !ok || name != metric || !all(labels, match) {
			continue
		}
		x, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		lines[i] = l[:len(l)-len(val)] + strconv.FormatFloat(f(x), 'g', -1, 64)
	}
	return strings.Join(lines, "\n")
}

// Set gives metric's matching series the value x.
func Set(body, metric string, x float64, match ...string) string {
	return Edit(body, metric, func(float64) float64 { return x }, match...)
}

// Add advances metric's matching series by d.
func Add(body, metric string, d float64, match ...string) string {
	return Edit(body, metric, func(x float64) float64 { return x + d }, match...)
}

// Observe adds n observations of value to histogram hist's matching series: every bucket
// whose bound is at least value, _count and _sum.
func Observe(body, hist string, value, n float64, match ...string) string {
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		name, labels, val, ok := split(l)
		if !ok || !all(labels, match) {
			continue
		}
		x, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		switch name {
		case hist + "_bucket":
			if le, ok := bound(labels); !ok || le < value {
				continue
			}
			x += n
		case hist + "_count":
			x += n
		case hist + "_sum":
			x += n * value
		default:
			continue
		}
		lines[i] = l[:len(l)-len(val)] + strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(lines, "\n")
}

// split cuts a sample line into name, label text and value (the last field).
func split(l string) (name, labels, val string, ok bool) {
	if l == "" || l[0] == '#' {
		return "", "", "", false
	}
	sp := strings.LastIndexByte(l, ' ')
	if sp < 0 {
		return "", "", "", false
	}
	head, val := l[:sp], l[sp+1:]
	if b := strings.IndexByte(head, '{'); b >= 0 {
		return head[:b], head[b:], val, true
	}
	return strings.TrimSpace(head), "", val, true
}

func all(labels string, match []string) bool {
	for _, m := range match {
		if !strings.Contains(labels, m) {
			return false
		}
	}
	return true
}

func bound(labels string) (float64, bool) {
	i := strings.Index(labels, `le="`)
	if i < 0 {
		return 0, false
	}
	rest := labels[i+4:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return 0, false
	}
	if rest[:j] == "+Inf" {
		return math.Inf(1), true
	}
	f, err := strconv.ParseFloat(rest[:j], 64)
	return f, err == nil
}
