// Package hostileseed reads the hostile corpus of testdata/hostile/ for the fuzz targets of
// every package, wherever in the tree the test runs.
package hostileseed

import (
	"os"
	"path/filepath"
	"testing"
)

// Files is every file of testdata/hostile/<kind>/ for each kind, found from the module's root
// (the nearest folder above the test's own with a go.mod).
func Files(tb testing.TB, kinds ...string) [][]byte {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatalf("hostile seeds: %v", err)
	}
	var out [][]byte
	for _, kind := range kinds {
		files, err := filepath.Glob(filepath.Join(root, "testdata", "hostile", kind, "*"))
		if err != nil || len(files) == 0 {
			tb.Fatalf("no hostile %s seeds: %v", kind, err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
