package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/vllmtop/vllmtop"

// layers is docs/design.md's picture: a package may import packages of its own layer or
// lower ones, never higher. The first prefix that matches a folder names its layer.
var layers = []struct {
	prefix string
	layer  int
	group  string // packages of one layer and different groups never import each other
}{
	{"internal/base", 0, ""},
	{"server/sim", 1, "server"},
	{"themes", 2, "themes"},
	{"server", 2, "server"},
	{"loadgen", 2, "loadgen"},
	{"scrape", 2, "scrape"},
	{"tui", 3, ""},
	{"internal/app", 4, ""},
	{"", 5, ""}, // package main at the root
}

func layerOf(dir string) (int, string) {
	for _, l := range layers {
		if dir == l.prefix || strings.HasPrefix(dir, l.prefix+"/") || l.prefix == "" && dir == "." {
			return l.layer, l.group
		}
	}
	return -1, ""
}

// rootFolders are the folders docs/design.md allows at the root.
var rootFolders = []string{"docs", "internal", "loadgen", "scrape", "server", "testdata", "themes", "tui"}

// TestRootHoldsTheDesignsFolders reads the folders git tracks (a run's ignored output, such
// as results/, is not part of the layout); outside a git checkout it reads the directory.
func TestRootHoldsTheDesignsFolders(t *testing.T) {
	seen := map[string]bool{}
	if out, err := exec.Command("git", "ls-files").Output(); err == nil && len(out) > 0 {
		for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if dir, _, ok := strings.Cut(f, "/"); ok && !strings.HasPrefix(dir, ".") {
				seen[dir] = true
			}
		}
	} else {
		entries, err := os.ReadDir(".")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				seen[e.Name()] = true
			}
		}
	}
	var got []string
	for d := range seen {
		got = append(got, d)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(rootFolders, " ") {
		t.Errorf("root folders are %v; docs/design.md names %v", got, rootFolders)
	}
}

// TestLayering fails for any import from a lower layer to a higher one, or between the
// domain packages (server, loadgen, scrape, themes), which never import each other.
func TestLayering(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		from, fromGroup := layerOf(dir)
		if from < 0 {
			t.Errorf("%s: folder %s is in no layer of docs/design.md", path, dir)
			return nil
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, modulePath+"/") {
				continue
			}
			to, toGroup := layerOf(strings.TrimPrefix(p, modulePath+"/"))
			switch {
			case to > from:
				t.Errorf("%s (layer %d) imports %s (layer %d): an import up the layers", path, from, p, to)
			case to == from && fromGroup != toGroup:
				t.Errorf("%s imports %s: %s and %s never import each other", path, p, fromGroup, toGroup)
			}
			if fromGroup == "server" && toGroup == "server" && strings.HasPrefix(dir, "server/sim") &&
				!strings.HasPrefix(strings.TrimPrefix(p, modulePath+"/"), "server/sim") {
				t.Errorf("%s imports %s: the simulator sits below the supervisor", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
