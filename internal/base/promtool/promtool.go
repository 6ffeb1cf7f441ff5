// Package promtool runs Prometheus's tools from tests: found on PATH, installed by .ci/run in CI
// (where their absence fails the test), skipped with a reason elsewhere.
package promtool

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Need returns the path of command name, or ends the test: a failure under CI
// (VLLMTOP_CI set), a skip otherwise.
func Need(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("VLLMTOP_CI") != "" {
		t.Fatalf("%s is not installed; .ci/run installs Debian's prometheus package", name)
	}
	t.Skipf("%s not installed (apt-get install prometheus); skipping", name)
	return ""
}

// Warnings runs `promtool check metrics` on an exposition and returns its distinct warnings
// (each names its metric), sorted.
func Warnings(t testing.TB, promtool, exposition string) []string {
	t.Helper()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("promtool: %v", err)
	}
	set := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			set[l] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}
