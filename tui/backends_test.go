package tui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/scrape/fleet"
)

// serveFixture answers /metrics with a real capture.
func serveFixture(t *testing.T, name string) string {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("..", "testdata", name))
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const (
	sglangCapture = "sglang-v0.4-metrics-llama-3.1-8b-loaded-docs.prom"
	tgiCapture    = "tgi-metrics-payload.prom"
)

func TestAttachedSGLangAndTGISayWhatTheyDoNotExport(t *testing.T) {
	for _, tc := range []struct{ capture, backend, missing, has string }{
		{sglangCapture, "SGLang", "preemptions", "KV cache"},
		{tgiCapture, "TGI", "KV %", "Queue"},
	} {
		url := serveFixture(t, tc.capture)
		scr, err := scrape.NewClient(url)
		require.NoError(t, err)
		d := newDriver(t, 200, 60, func(dp *Deps) { dp.Mode, dp.Scraper = ModeAttach, scr })
		d.second()
		d.second()
		out := d.view()
		assert.Contains(t, out, tc.backend+" exports no", tc.backend)
		assert.Contains(t, out, tc.missing, tc.backend)
		assert.Contains(t, out, tc.has, tc.backend)
		assert.NotNil(t, d.m.c.s.snap)
		assert.Equal(t, tc.backend == "SGLang", d.m.c.s.snap.Backend == scrape.BackendSGLang)
	}
}

func TestFleetRowsOfSGLangAndTGI(t *testing.T) {
	src, err := fleet.NewDirect(fleet.DirectConfig{Endpoints: []fleet.Endpoint{
		{Name: "sglang", URL: serveFixture(t, sglangCapture)}, {Name: "tgi", URL: serveFixture(t, tgiCapture)}}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, src.Refresh(ctx))
	d := newDriver(t, 120, 40, func(dp *Deps) {
		dp.Mode, dp.Supervisor, dp.Load, dp.Scraper, dp.Fleet = ModeAttach, nil, nil, nil, src
	})
	d.send(fleetMsg{f: src.Fleet(diagnose.Facts{})})
	p := panelOf[*fleetPanel](d)
	require.Len(t, p.shown, 2)
	out := d.view()
	assert.Contains(t, out, "sglang")
	assert.Contains(t, out, "tgi")
	for p.shown[p.cursor].Name != "tgi" {
		d.press("j")
	}
	out = d.view()
	assert.Contains(t, out, "TGI does not export kv_cache_usage")
	tgi := p.shown[p.cursor]
	assert.True(t, tgi.Waiting.OK, "tgi_queue_size fills the row")
	assert.False(t, tgi.KVCacheUsage.OK)
}
