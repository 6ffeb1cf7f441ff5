package serve

import (
	"strings"
	"testing"

	"github.com/vllmtop/vllmtop/internal/base/hostileseed"
)

// FuzzConfigYAML: whatever the bytes of a --config file, the reader returns an error or
// flags, never panics, and never makes more arguments than the file has values.
func FuzzConfigYAML(f *testing.F) {
	for _, b := range hostileseed.Files(f, "yaml") {
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
