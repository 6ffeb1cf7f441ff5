package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzConfigYAML: whatever the bytes of a --config file, the reader returns an error or
// flags, never panics, and never makes more arguments than the file has values.
func FuzzConfigYAML(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "testdata", "hostile", "yaml", "*.yaml"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no hostile yaml seeds: %v", err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxConfigBytes {
			return
		}
		args, err := parseConfigYAML(data)
		if err != nil {
			return
		}
		if len(args) > maxConfigNodes {
			t.Fatalf("%d arguments from %d bytes", len(args), len(data))
		}
		for _, a := range args {
			if !strings.HasPrefix(a, "--") {
				t.Fatalf("argument %q is not a flag", a)
			}
		}
	})
}
