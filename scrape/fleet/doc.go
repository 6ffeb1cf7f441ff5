// Package fleet watches many inference servers at once and says which one is sick and why.
//
// Two sources give the same rows: Direct scrapes a list of endpoints itself (each on its own
// cadence, concurrently but bounded, each with a timeout), and Prometheus reads a fleet that
// a Prometheus server already scrapes, by label selector, through client_golang's API
// (instant queries for the rows, query_range for an hour of history at once).
//
// A Row is one endpoint, or one data-parallel engine of one: its model, its state (up, DOWN,
// STALE, RESTARTED), the numbers of diagnose.Signals over the window (absent when the server
// does not export them, never 0), what its backend cannot export at all, and its verdicts,
// imbalance across replicas and engines included. History keeps a bounded series per row
// for charts.
//
// Every string that came from the network passes internal/untrusted before it is stored in
// a Row; numbers are bounded. Sources are safe for concurrent use: Run polls in its own
// goroutines, Fleet and History may be called from any goroutine (a UI's tick) and copy.
package fleet
