package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vllmtop --config FILE with each crafted file of the corpus: one line on stderr, naming the
// file, exit status 2, nothing on stdout.
func TestHostileConfigCommand(t *testing.T) {
	dir := filepath.Join("testdata", "hostile", "config")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		if e.Name() == "many-unknown-keys.toml" {
			continue // many errors: one line each, checked in the config package
		}
		t.Run(e.Name(), func(t *testing.T) {
			path := filepath.Join(dir, e.Name())
			code, out, errOut := runVllmtop("--config", path, "--attach", "http://127.0.0.1:1")
			assert.Equal(t, 2, code, errOut)
			assert.Empty(t, out)
			lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
			require.Len(t, lines, 1, "%.1000s", errOut)
			assert.Contains(t, lines[0], path+":")
			assert.Less(t, len(lines[0]), 500)
			assert.NotContains(t, errOut, "\x1b")
			assert.NotContains(t, errOut, "sk-proj")
		})
	}
}
