package tui

import "sort"

func sortStrings(s []string) { sort.Strings(s) }
func sortFloats(f []float64) { sort.Float64s(f) }
