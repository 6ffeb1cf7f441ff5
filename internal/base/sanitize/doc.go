// Package sanitize makes text that came from outside (a server's responses, its logs, its
// /metrics labels, a file) safe to show on a terminal or to use in a file name, and takes
// secrets out of URLs before they are printed.
//
//   - Text removes everything a terminal would act on rather than print: C0 controls but tab,
//     DEL, C1 controls, whole escape sequences (CSI, OSC, DCS, SOS, PM, APC and two-byte
//     escapes, in their ESC and C1 forms) and the bidirectional controls that reorder what is
//     shown. Printable Unicode is kept; invalid UTF-8 becomes U+FFFD.
//   - FileName is Text plus what a file name must not hold: path separators, "..", a leading
//     dot or dash, and more than MaxFileNameBytes bytes.
//   - URL replaces a URL's password and query values with "***".
//
// Every function is pure, safe for concurrent use and idempotent (applying it twice changes
// nothing more), and returns its input without allocating when there is nothing to change.
// The package imports nothing of this module, so every other package may use it.
package sanitize
