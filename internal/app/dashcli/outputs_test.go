package dashcli

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/cliflag"
)

const mine = "the user's own file\n"

// TestDashboardKeepsTheUsersFiles: --record at a file that exists or at a link, and an
// --export-dir that cannot be made, are refused by Build before anything is asked of the
// server; --overwrite replaces a regular --record file.
func TestDashboardKeepsTheUsersFiles(t *testing.T) {
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { asked.Add(1) }))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	existing := filepath.Join(dir, "r.jsonl")
	require.NoError(t, os.WriteFile(existing, []byte(mine), 0o644))
	target := filepath.Join(dir, "precious.txt")
	require.NoError(t, os.WriteFile(target, []byte(mine), 0o644))
	link := filepath.Join(dir, "l.jsonl")
	require.NoError(t, os.Symlink(target, link))
	for _, tc := range []struct {
		name  string
		args  []string
		usage bool   // a usage error (exit 2), else a plain one (exit 1)
		says  string // in the error
		kept  string // a file still holding mine
	}{
		{"an existing record is kept", []string{"--record", existing}, true, "r.jsonl exists: give --overwrite to replace it, or another --record", existing},
		{"a link at the record is refused", []string{"--record", link, "--overwrite"}, true, "symbolic link", target},
		{"an export directory that cannot be made", []string{"--export-dir", filepath.Join(existing, "sub")}, false, "cannot write", existing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := parseDashboard(append([]string{"--attach", srv.URL}, tc.args...)...)
			require.NoError(t, err)
			err = d.Build(nil, nil)
			require.Error(t, err)
			var usage *cliflag.UsageError
			assert.Equal(t, tc.usage, errors.As(err, &usage), "%v", err)
			assert.Contains(t, err.Error(), tc.says)
			b, rerr := os.ReadFile(tc.kept)
			require.NoError(t, rerr)
			assert.Equal(t, mine, string(b))
			assert.Nil(t, d.load, "no load built")
		})
	}
	assert.Zero(t, asked.Load(), "the server was asked nothing")

	d, err := parseDashboard("--attach", srv.URL, "--record", existing, "--overwrite")
	require.NoError(t, err)
	require.NoError(t, d.Build(nil, nil))
	require.NotNil(t, d.load)
	require.NoError(t, d.load.Close())
	b, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Empty(t, b, "replaced as asked")
}
