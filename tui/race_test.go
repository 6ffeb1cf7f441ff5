//go:build race

package tui_test

// raceEnabled is true when the tests run with the race detector; the binary the end-to-end
// test supervises is built the same way, so it reuses the packages the test build compiled.
const raceEnabled = true
