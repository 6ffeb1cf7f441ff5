// Package diagnose turns what a server showed over a window into verdicts a person on call
// can act on: named rules with thresholds, each verdict a one-line text, a severity, the
// engine flags to try and the evidence (values and thresholds) it used.
//
// The input is Signals, one per server or data-parallel engine, filled from a direct scrape
// (FromWindow, over scrape.Snapshot and scrape.Window) or from PromQL (package fleet), plus
// Facts the load generator knows about itself. Evaluate applies the per-server rules;
// Imbalance compares the members of a group (replicas of one model, or engines of one
// server). Absent values never fire a rule: a rule that needs a number the server does not
// export stays silent rather than guess.
//
// Everything here is pure and safe for concurrent use.
package diagnose
