package untrusted

import (
	"os"
	"path/filepath"
	"testing"
)

// hostileSeeds is every file of testdata/hostile/<kind>/ for each kind, to seed fuzz targets.
func hostileSeeds(tb testing.TB, kinds ...string) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, kind := range kinds {
		files, err := filepath.Glob(filepath.Join("../../..", "testdata", "hostile", kind, "*"))
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
