//go:build race

package server

// raceEnabled is true when the tests run with the race detector; the vllmtop binary for the
// process tests is built the same way, so it reuses the packages the test build compiled.
const raceEnabled = true
