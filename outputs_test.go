package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// okServer answers every completion with four tokens.
func okServer(t *testing.T) *hostile {
	return newHostile(t, "org/m", func(w http.ResponseWriter, _ *http.Request) {
		okStream(w, 4, `{"prompt_tokens":8,"completion_tokens":4,"total_tokens":12}`)
	})
}

// mine is what the user had at a path before the command ran.
const mine = "the user's own file\n"

func writeMine(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(mine), 0o644))
}

// linkToMine puts a link at path to a file of the user's beside it, and returns the target.
func linkToMine(t *testing.T, path string) string {
	t.Helper()
	target := filepath.Join(filepath.Dir(path), "precious.txt")
	writeMine(t, target)
	require.NoError(t, os.Symlink(target, path))
	return target
}

func assertMine(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, mine, string(b), "%s was changed", path)
}

// TestBenchKeepsTheUsersFiles: an output path that would clobber a file, write through a link
// or leave --result-dir is refused before any request, with one line naming it (exit 2); a
// directory that cannot be made is refused before any request too (exit 1); --overwrite and
// --append-result do what they say.
func TestBenchKeepsTheUsersFiles(t *testing.T) {
	benchNoKeys(t)
	sla := []string{"--sla-variable", "max_concurrency", "--sla", "p99_ttft_ms<=500", "--num-prompts", "4", "--sla-min-requests", "4"}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string) // dir is --result-dir
		args  func(dir string) []string
		code  int
		says  string                         // in the error line
		check func(t *testing.T, dir string) // afterwards
	}{
		{"an existing result is kept", func(t *testing.T, dir string) { writeMine(t, filepath.Join(dir, "r.json")) },
			func(dir string) []string {
				return []string{"--save-result", "--result-dir", dir, "--result-filename", "r.json"}
			},
			2, "r.json exists: give --overwrite to replace it", func(t *testing.T, dir string) { assertMine(t, filepath.Join(dir, "r.json")) }},
		{"a sweep's existing result is kept", func(t *testing.T, dir string) { writeMine(t, filepath.Join(dir, "r-concurrency2.json")) },
			func(dir string) []string {
				return []string{"--save-result", "--result-dir", dir, "--result-filename", "r.json", "--max-concurrency", "1,2"}
			},
			2, "r-concurrency2.json exists", func(t *testing.T, dir string) { assertMine(t, filepath.Join(dir, "r-concurrency2.json")) }},
		{"a link at the result is refused", func(t *testing.T, dir string) { linkToMine(t, filepath.Join(dir, "r.json")) },
			func(dir string) []string {
				return []string{"--save-result", "--result-dir", dir, "--result-filename", "r.json", "--overwrite"}
			},
			2, "symbolic link", func(t *testing.T, dir string) { assertMine(t, filepath.Join(dir, "precious.txt")) }},
		{"--result-filename stays in --result-dir", nil,
			func(dir string) []string {
				return []string{"--save-result", "--result-dir", filepath.Join(dir, "a", "b"), "--result-filename", "../../f.json"}
			},
			2, "leads out of its directory", func(t *testing.T, dir string) { assert.NoFileExists(t, filepath.Join(dir, "f.json")) }},
		{"a directory that cannot be made", func(t *testing.T, dir string) { writeMine(t, filepath.Join(dir, "file")) },
			func(dir string) []string {
				return []string{"--save-result", "--result-dir", filepath.Join(dir, "file", "sub")}
			},
			1, "cannot write the results", func(t *testing.T, dir string) { assertMine(t, filepath.Join(dir, "file")) }},
		{"an existing plot is kept", func(t *testing.T, dir string) { writeMine(t, filepath.Join(dir, "c.svg")) },
			func(dir string) []string { return append([]string{"--plot", filepath.Join(dir, "c.svg")}, sla...) },
			2, "c.svg exists: give --overwrite to replace it", func(t *testing.T, dir string) { assertMine(t, filepath.Join(dir, "c.svg")) }},
		{"a link at the plot is refused", func(t *testing.T, dir string) { linkToMine(t, filepath.Join(dir, "c.svg")) },
			func(dir string) []string {
				return append([]string{"--plot", filepath.Join(dir, "c.svg"), "--overwrite"}, sla...)
			},
			2, "symbolic link", func(t *testing.T, dir string) { assertMine(t, filepath.Join(dir, "precious.txt")) }},
		{"an existing summary.csv is kept", func(t *testing.T, dir string) { writeMine(t, filepath.Join(dir, "summary.csv")) },
			func(dir string) []string { return append([]string{"--result-dir", dir}, sla...) },
			2, "summary.csv exists", func(t *testing.T, dir string) { assertMine(t, filepath.Join(dir, "summary.csv")) }},
		{"a link at summary.csv is refused", func(t *testing.T, dir string) { linkToMine(t, filepath.Join(dir, "summary.csv")) },
			func(dir string) []string { return append([]string{"--result-dir", dir, "--overwrite"}, sla...) },
			2, "symbolic link", func(t *testing.T, dir string) { assertMine(t, filepath.Join(dir, "precious.txt")) }},
		{"an earlier search's probes are kept", func(t *testing.T, dir string) { writeMine(t, filepath.Join(dir, "max_concurrency=4", "run=0.json")) },
			func(dir string) []string { return append([]string{"--result-dir", dir}, sla...) },
			2, "max_concurrency=4 exists", func(t *testing.T, dir string) { assertMine(t, filepath.Join(dir, "max_concurrency=4", "run=0.json")) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := okServer(t)
			dir := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			args := benchArgs(h.URL, tc.args(dir)...)
			if slices.Contains(tc.args(dir), "--sla") { // a search sets the concurrency itself
				args = append([]string{"bench", "--base-url", h.URL, "--random-input-len", "8", "--random-output-len", "4", "--disable-tqdm"}, tc.args(dir)...)
			}
			o := hostileRun(t, args...)
			assert.Equal(t, tc.code, o.code, o.stderr)
			assert.Equal(t, 1, strings.Count(o.stderr, "\n"), "one line: %q", o.stderr)
			assert.True(t, strings.HasPrefix(o.stderr, "vllmtop bench: "), o.stderr)
			assert.Contains(t, o.stderr, tc.says)
			assert.Zero(t, h.requests.Load(), "a bad output path costs no request")
			assert.Empty(t, o.stdout)
			tc.check(t, dir)
		})
	}
}

// TestBenchOutputsAsked: a label with a path in it names a file inside --result-dir;
// --overwrite replaces a result; --append-result adds one JSON line after vLLM's.
func TestBenchOutputsAsked(t *testing.T) {
	benchNoKeys(t)
	h := okServer(t)
	root := t.TempDir()
	dir := filepath.Join(root, "out", "res")
	o := hostileRun(t, benchArgs(h.URL, "--save-result", "--result-dir", dir, "--label", "x/../../y")...)
	require.Equal(t, 0, o.code, o.stderr)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.False(t, entries[0].IsDir())
	assert.NotContains(t, entries[0].Name(), "..")
	assert.NoDirExists(t, filepath.Join(root, "y"))
	assert.NoDirExists(t, filepath.Join(root, "x"))

	path := filepath.Join(dir, "r.json")
	writeMine(t, path)
	o = hostileRun(t, benchArgs(h.URL, "--save-result", "--result-dir", dir, "--result-filename", "r.json", "--overwrite")...)
	require.Equal(t, 0, o.code, o.stderr)
	var doc map[string]any
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &doc), "replaced by the result")
	assert.EqualValues(t, 4, doc["completed"])

	require.NoError(t, os.WriteFile(path, []byte(`{"completed": 1}`), 0o644)) // vLLM ends its file without a newline
	for range 2 {
		o = hostileRun(t, benchArgs(h.URL, "--save-result", "--result-dir", dir, "--result-filename", "r.json", "--append-result")...)
		require.Equal(t, 0, o.code, o.stderr)
	}
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, 3, "%s", b)
	for i, want := range []float64{1, 4, 4} {
		require.NoError(t, json.Unmarshal([]byte(lines[i]), &doc), "line %d", i+1)
		assert.Equal(t, want, doc["completed"])
	}

	o = hostileRun(t, benchArgs(h.URL, "--save-result", "--append-result", "--overwrite")...)
	assert.Equal(t, 2, o.code, "append or replace, not both")
}

// TestSweepKeepsThePlot: a sweep whose --plot exists (or is a link) stops before any server
// starts or any directory is made; --overwrite replaces the file, never a link.
func TestSweepKeepsThePlot(t *testing.T) {
	benchNoKeys(t)
	serveParams, _, out := sweepFiles(t)
	plot := filepath.Join(t.TempDir(), "curves.svg")
	writeMine(t, plot)
	sweep := func(more ...string) (int, string) {
		args := append([]string{"sweep", "--serve-cmd", "vllmtop sim Qwen/Qwen2.5-0.5B-Instruct --sim-gpu L4", "--sim-clock", "virtual",
			"--serve-params", serveParams, "--num-runs", "1", "-o", out, "-e", "p", "--plot", plot,
			"--bench-cmd", "vllm bench serve --num-prompts 8 --random-input-len 64 --random-output-len 8"}, more...)
		code, _, errOut := runVllmtop(args...)
		return code, errOut
	}
	code, errOut := sweep()
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "curves.svg exists: give --overwrite to replace it")
	assertMine(t, plot)
	assert.NoDirExists(t, filepath.Join(out, "p"), "refused before the experiment began")

	require.NoError(t, os.Remove(plot))
	target := linkToMine(t, plot)
	code, errOut = sweep("--overwrite")
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "symbolic link")
	assertMine(t, target)

	require.NoError(t, os.Remove(plot))
	writeMine(t, plot)
	code, errOut = sweep("--overwrite")
	require.Equal(t, 0, code, errOut)
	b, err := os.ReadFile(plot)
	require.NoError(t, err)
	assert.Contains(t, string(b), "<svg", "replaced by the plot")
}
