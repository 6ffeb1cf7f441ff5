package fleet

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// A 10 MB body that never parses is fetched a handful of times over a minute of ticks, not
// once a tick, and its row says why it fails.
func TestPollBacksOffOnBodyThatDoesNotParse(t *testing.T) {
	body := "vllm:num_requests_running 1\n" + strings.Repeat("vllm:x{{{ not a sample\n", 10<<20/23)
	var fetches atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	d, err := NewDirect(DirectConfig{Endpoints: []Endpoint{{Name: "bad", URL: srv.URL}}, Interval: time.Second, Timeout: 10 * time.Second})
	require.NoError(t, err)

	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.pollTicks(ctx, d.trackers[0], ticks)
	}()
	const n = 60
	for range n {
		ticks <- time.Time{} // taken only once the previous scrape has finished
	}
	cancel()
	<-done
	// Scrapes at ticks 0, 1, 3, 7, 15, 31 (then every 30): six, where every tick would be 61.
	got := fetches.Load()
	assert.GreaterOrEqual(t, got, int64(5))
	assert.LessOrEqual(t, got, int64(8), "a body that never parses is re-read %d times in %d ticks", got, n)
	row := d.Fleet(diagnose.Facts{})
	require.NotEmpty(t, row.Rows)
	assert.NotEmpty(t, row.Rows[0].LastError, "the failure is shown")
	t.Logf("%d fetches in %d ticks; row says %q", got, n, row.Rows[0].LastError)
}
