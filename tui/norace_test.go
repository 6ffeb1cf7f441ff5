//go:build !race

package tui_test

const raceEnabled = false
