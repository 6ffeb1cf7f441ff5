package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCreate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    Mode
		setup   func(t *testing.T, path string) // what is at path before
		want    string                          // the file afterwards ("" with an error: untouched)
		wantErr error
	}{
		{"new", New, nil, "new", nil},
		{"existing kept", New, keep, "", ErrExists},
		{"overwrite", Overwrite, keep, "new", nil},
		{"append", Append, keep, "oldnew", nil},
		{"link refused", New, link, "", ErrLink},
		{"link refused on overwrite", Overwrite, link, "", ErrLink},
		{"link refused on append", Append, link, "", ErrLink},
		{"directory refused", Overwrite, func(t *testing.T, p string) { require.NoError(t, os.Mkdir(p, 0o755)) }, "", ErrLink},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", "out.json")
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			if tc.setup != nil {
				tc.setup(t, path)
			}
			opts := Options{Mode: tc.mode, Hint: "give --overwrite to replace it"}
			checkErr := Check(path, opts)
			err := WriteFile(path, []byte("new"), opts)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				require.ErrorIs(t, checkErr, tc.wantErr, "Check decides as Create does")
				assert.Contains(t, err.Error(), path)
				if tc.wantErr == ErrExists {
					assert.Contains(t, err.Error(), "--overwrite")
				}
				assertUntouched(t, path)
				return
			}
			require.NoError(t, checkErr)
			require.NoError(t, err)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(b))
		})
	}
}

func keep(t *testing.T, path string) { require.NoError(t, os.WriteFile(path, []byte("old"), 0o644)) }

// link points path at a file beside it holding "old".
func link(t *testing.T, path string) {
	target := path + ".target"
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o644))
	require.NoError(t, os.Symlink(target, path))
}

// assertUntouched checks that whatever was at path still holds "old" (a directory is left).
func assertUntouched(t *testing.T, path string) {
	t.Helper()
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return
	}
	b, err := os.ReadFile(path) // through a link: its target
	require.NoError(t, err)
	assert.Equal(t, "old", string(b))
}

func TestCreateMakesTheDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "out.csv")
	require.NoError(t, WriteFile(path, []byte("x"), Options{}))
	assert.FileExists(t, path)
}

func TestCheckRefusesAnUnwritableDirectory(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root writes anywhere")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	require.NoError(t, os.Mkdir(dir, 0o555))
	err := Check(filepath.Join(dir, "out.json"), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), dir)
	assert.False(t, errors.Is(err, ErrExists))
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries)
}

func TestCheckRefusesAFileAsDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	require.Error(t, Check(filepath.Join(file, "out.json"), Options{}))
}

func TestCheckLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Check(filepath.Join(dir, "out.json"), Options{}))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

func TestWithin(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"f.json", true},
		{"sub/f.json", true},
		{"a/../f.json", true},
		{"../f.json", false},
		{"../../f", false},
		{"x/../../y", false},
		{"..", false},
		{".", false},
		{"/etc/passwd", false},
	} {
		got, err := Within(dir, tc.name)
		if !tc.ok {
			require.ErrorIs(t, err, ErrOutside, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.True(t, strings.HasPrefix(got, dir+string(filepath.Separator)), got)
	}
}
