package loadgen

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/outfile"
)

func TestResultPathStaysInTheDirectory(t *testing.T) {
	dir := t.TempDir()
	info := RunInfo{Date: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), Backend: BackendCompletions, ModelID: "org/m", RequestRate: math.Inf(1)}
	for _, label := range []string{"x/../../y", "../../etc/passwd", "..", "/abs"} {
		info.Label = label
		path, err := ResultPath(info, SaveOptions{Dir: dir})
		require.NoError(t, err, label)
		assert.Equal(t, dir, filepath.Dir(path), "label %q names a file in the directory", label)
		assert.NotContains(t, filepath.Base(path), "..")
	}
	info.Label = ""
	for _, name := range []string{"../../f", "a/../../f", "/tmp/f.json"} {
		_, err := ResultPath(info, SaveOptions{Dir: dir, Filename: name})
		assert.ErrorIs(t, err, outfile.ErrOutside, name)
	}
	path, err := ResultPath(info, SaveOptions{Dir: dir, Filename: "sub/f.json"})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "sub", "f.json"), path)
	path, err = ResultPath(info, SaveOptions{Filename: "../f.json"})
	require.NoError(t, err, "without --result-dir the path is the user's")
	assert.Equal(t, "../f.json", path)
}

func TestSaveResultKeepsAFile(t *testing.T) {
	dir := t.TempDir()
	info := RunInfo{Date: time.Now(), Backend: BackendCompletions, ModelID: "m", RequestRate: 1}
	opts := SaveOptions{Dir: dir, Filename: "r.json"}
	_, err := SaveResult(ResultDoc{{"completed", 1}}, info, opts)
	require.NoError(t, err)
	_, err = SaveResult(ResultDoc{{"completed", 2}}, info, opts)
	require.ErrorIs(t, err, outfile.ErrExists)
	assert.Contains(t, err.Error(), "--overwrite")
	b, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	assert.Contains(t, string(b), `"completed": 1`)

	opts.Append = true
	_, err = SaveResult(ResultDoc{{"completed", 3}}, info, opts)
	require.NoError(t, err)
	b, _ = os.ReadFile(filepath.Join(dir, "r.json"))
	assert.Equal(t, "{\"completed\": 1}\n{\"completed\": 3}\n", string(b), "JSON lines, as vLLM's json.dump writes them")
}

// vLLM's pattern names the second a run ended in; two runs of one second keep both results.
func TestSaveResultGeneratedNameTakesTheNextFree(t *testing.T) {
	dir := t.TempDir()
	info := RunInfo{Date: time.Date(2026, 12, 7, 0, 12, 54, 0, time.UTC), Backend: BackendCompletions, ModelID: "m", RequestRate: 1}
	var names []string
	for i := 1; i <= 3; i++ {
		name, err := SaveResult(ResultDoc{{"completed", i}}, info, SaveOptions{Dir: dir})
		require.NoError(t, err)
		names = append(names, filepath.Base(name))
	}
	base := ResultFilename(info)
	stem := strings.TrimSuffix(base, ".json")
	assert.Equal(t, []string{base, stem + "-2.json", stem + "-3.json"}, names)
	for i, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		assert.Contains(t, string(b), fmt.Sprintf(`"completed": %d`, i+1))
	}
}

func TestJournalKeepsAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("mine\n"), 0o644))
	_, err := CreateJSONL(path, RecordFile(false))
	require.ErrorIs(t, err, outfile.ErrExists)
	j, err := CreateJSONL(path, RecordFile(true))
	require.NoError(t, err)
	j.Add(Result{Index: 1})
	require.NoError(t, j.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "mine")
}

// A stream may carry as many chunks as the merged body asks for: --extra-body's max_tokens
// where larger, times n and the prompts of a list.
func TestOutputBoundFollowsTheExtraBody(t *testing.T) {
	for _, tc := range []struct {
		body map[string]any
		want int
	}{
		{nil, 8},
		{map[string]any{"max_tokens": 20.0}, 20},
		{map[string]any{"max_tokens": 4.0}, 8},
		{map[string]any{"max_completion_tokens": 30.0, "n": 2.0}, 60},
		{map[string]any{"prompt": []any{[]any{1.0, 2.0}, []any{3.0}}}, 16},
		{map[string]any{"prompt": []any{1.0, 2.0, 3.0}}, 8},
		{map[string]any{"n": 1e300, "max_tokens": -5.0}, 8 * 1024},
	} {
		assert.Equal(t, tc.want, RequestExtras{Body: tc.body}.outputBound(8), "%v", tc.body)
	}
}
