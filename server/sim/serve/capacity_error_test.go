package serve

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPrintCapacityErrorIsOneLineOnStderr(t *testing.T) {
	for _, args := range [][]string{
		{"--print-capacity", "--sim-profiles", filepath.Join(t.TempDir(), "missing.json")},
		{"--print-capacity", "--sim-gpu", "nope"},
		{"--print-capacity", "--gpu-memory-utilization", "1.5"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, &out, &errb, emptyEnv)
		assert.Equal(t, 2, code, "%q", args)
		assert.Empty(t, out.String(), "%q: nothing on stdout, where the report goes", args)
		assert.True(t, strings.HasPrefix(errb.String(), "vllmtop sim: error: "), "%q: %q", args, errb.String())
		assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "%q: one line", args)
	}
}
