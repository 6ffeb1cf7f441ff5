package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/vllmtop/vllmtop/server/sim"
)

// A .md file named in Go source, with an optional #anchor: "docs/calibration.md#moe-activation".
var goDocRef = regexp.MustCompile(`[A-Za-z0-9_./-]*\.md(#[A-Za-z0-9_-]+)?\b`)

// A Markdown link to a local .md file: "[text](calibration.md#moe-activation)".
var mdDocLink = regexp.MustCompile(`\]\(([^)#\s:]+\.md)(#[^)\s]*)?\)`)

// TestSourcesCitedExist holds every citation of a document to the repository: each .md a Go file
// names is a path from the module root that exists, and its anchor is a heading of that file;
// each local link between Markdown files resolves the same way. A clone has nothing else to
// check a source against.
func TestSourcesCitedExist(t *testing.T) {
	anchors := map[string]map[string]bool{} // file -> anchors, read once
	check := func(where, file, anchor string) {
		a, ok := anchors[file]
		if !ok {
			if b, err := os.ReadFile(file); err == nil {
				a = markdownAnchors(b)
			}
			anchors[file] = a
		}
		if a == nil {
			t.Errorf("%s cites %s, which is not in the repository", where, file)
			return
		}
		if anchor != "" && !a[anchor] {
			t.Errorf("%s cites %s#%s, a section %s does not have", where, file, anchor, file)
		}
	}
	walkRepo(t, func(path string, data []byte) {
		switch {
		case path == "docs_test.go": // its patterns and examples are not citations
		case strings.HasSuffix(path, ".go"):
			for i, line := range bytes.Split(data, []byte("\n")) {
				for _, m := range goDocRef.FindAllSubmatch(line, -1) {
					ref := strings.TrimPrefix(string(m[0]), "./")
					file, anchor, _ := strings.Cut(ref, "#")
					check(path+":"+strconv.Itoa(i+1), file, anchor)
				}
			}
		case strings.HasSuffix(path, ".md"):
			for _, m := range mdDocLink.FindAllSubmatch(data, -1) {
				file := filepath.ToSlash(filepath.Join(filepath.Dir(path), string(m[1])))
				check(path, file, strings.TrimPrefix(string(m[2]), "#"))
			}
		}
	})
}

// TestNoPathsOutsideTheRepository: no file points into the material a development checkout
// keeps beside the repository; a clone does not have it.
func TestNoPathsOutsideTheRepository(t *testing.T) {
	forbidden := []string{".." + "/shared", "shared" + "/reference"}
	walkRepo(t, func(path string, data []byte) {
		for _, f := range forbidden {
			if bytes.Contains(data, []byte(f)) {
				t.Errorf("%s mentions %q, which is outside the repository", path, f)
			}
		}
	})
}

func TestMarkdownAnchors(t *testing.T) {
	doc := "# Title\n## KV bytes per token and blocks\n## cache_config_info\n```\n## not a heading\n```\n" +
		"## Worked example: Qwen3.5-0.8B\n## Notes\n## Notes\n   ### Indented `code`\n"
	got := markdownAnchors([]byte(doc))
	for _, want := range []string{"title", "kv-bytes-per-token-and-blocks", "cache_config_info",
		"worked-example-qwen35-08b", "notes", "notes-1", "indented-code"} {
		if !got[want] {
			t.Errorf("anchor %q missing from %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a heading inside a code fence made an anchor")
	}
}

// markdownAnchors returns the anchors GitHub gives a document's headings: the text lower-cased,
// punctuation other than '-' and '_' dropped, spaces turned into '-', and a repeated anchor
// numbered -1, -2, ...
func markdownAnchors(doc []byte) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " ")
		if len(sc.Text())-len(line) > 3 {
			continue // indented code
		}
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			fenced = !fenced
			continue
		}
		text, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if fenced || !strings.HasPrefix(line, "#") || !ok {
			continue
		}
		slug := githubSlug(strings.TrimSpace(text))
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func githubSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// walkRepo calls fn with every file of the repository, relative to its root, outside hidden
// folders.
func walkRepo(t *testing.T, fn func(path string, data []byte)) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(path), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadmeCapacityExampleIsTrue runs the README's `--print-capacity` example and checks each
// row it shows against what the command prints now, so the figures cannot go stale.
func TestReadmeCapacityExampleIsTrue(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```\n$ vllmtop sim ")
	if !ok {
		t.Fatal("README has no `$ vllmtop sim` example")
	}
	block, _, _ = strings.Cut(block, "```")
	lines := strings.Split(strings.TrimRight(block, "\n"), "\n")
	command := lines[0]
	for strings.HasSuffix(command, `\`) && len(lines) > 1 {
		lines = lines[1:]
		command = strings.TrimSuffix(command, `\`) + " " + lines[0]
	}
	code, out, errOut := runVllmtop(append([]string{"sim"}, strings.Fields(command)...)...)
	if code != 0 {
		t.Fatalf("the example exits %d: %s", code, errOut)
	}
	for _, row := range lines[1:] {
		if !strings.Contains(out, strings.TrimRight(row, " ")) {
			t.Errorf("README row %q is not in the output:\n%s", row, out)
		}
	}
}

// TestReadmeCatalogueCounts holds the README's count of built-in GPUs and models to the
// embedded profiles.
func TestReadmeCatalogueCounts(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	p := sim.BuiltinProfiles()
	want := fmt.Sprintf("embedded): %d GPUs and %d models", len(p.GPUs), len(p.Models))
	if !strings.Contains(string(readme), want) {
		t.Errorf("README does not say %q", want)
	}
}
