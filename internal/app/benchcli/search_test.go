package benchcli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/simtest"
	"github.com/vllmtop/vllmtop/loadgen"
)

// parseOptions reads bench's flags as the command does.
func parseOptions(t *testing.T, args ...string) *Options {
	t.Helper()
	fs := pflag.NewFlagSet("vllmtop bench", pflag.ContinueOnError)
	o := Define(fs, nil, "", "")
	require.NoError(t, fs.Parse(args))
	require.NoError(t, o.Finish(fs, fs.Args(), func(string) string { return "" }))
	return o
}

// The simulator is killed during the first probe: that probe is discarded, never scored, and
// made again once the server is back; the search then ends on the retry's numbers.
func TestSearchDiscardsAProbeTheServerDiedIn(t *testing.T) {
	sim := simtest.Start(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4", "--sim-speed", "50")
	target, err := url.Parse(sim.URL)
	require.NoError(t, err)
	var completions atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = nil
	// No connection outlives the stopped server: the retry's first request must not meet one.
	proxy.Transport = &http.Transport{DisableKeepAlives: true}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/completions") && completions.Add(1) == 10 {
			sim.Stop() // dead mid-probe: this request and the probe's rest fail (502 from here)
		}
		// The proxy forwards a copy of the body. Forwarding r.Body itself races: once the
		// simulator answers, this server drains what is left of r.Body before the headers go
		// out, the proxy's last read of it fails, and the proxy drops the upstream stream.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	o := parseOptions(t, "--base-url", front.URL, "--sla", "p99_ttft_ms<=100000", "--sla-variable", "max_concurrency",
		"--num-prompts", "8", "--sla-min-requests", "8", "--random-input-len", "32", "--random-output-len", "4", "--disable-tqdm")
	o.Runs.Backoff = loadgen.BackoffConfig{Off: true} // the dead server's failures come at once
	var out, log bytes.Buffer
	say := func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) }
	b, err := Prepare(context.Background(), o, nil, Env{Stdout: &out, Stderr: &log, Say: say, Note: say})
	require.NoError(t, err)
	defer b.Close()
	var discarded []loadgen.SLODiscard
	b.onDiscard = func(d loadgen.SLODiscard) {
		discarded = append(discarded, d)
		sim.Restart(t) // back before the retry
	}
	slo, err := loadgen.ParseSLO("p99_ttft_ms<=100000")
	require.NoError(t, err)
	var scored []loadgen.SLOProbe
	res, err := b.Search(context.Background(), slo, "", nil, func(p loadgen.SLOProbe) { scored = append(scored, p) })
	require.NoError(t, err, "%s\n%s", out.String(), log.String())

	require.Len(t, discarded, 1, out.String())
	assert.Equal(t, 8, discarded[0].Value)
	assert.Equal(t, 1, discarded[0].Try)
	assert.Contains(t, discarded[0].Reason, "the server was unreachable or restarting")
	require.Len(t, scored, 1, "only the retry is scored")
	assert.Equal(t, res.Probes, scored)
	assert.Equal(t, 8, res.Knee)
	failed, _ := scored[0].Docs[0].Get("failed")
	assert.Equal(t, 0, failed, "the scored probe is the retry's: none of the dead server's failures\n%s\n%s\n%s", out.String(), log.String(), docJSON(scored[0].Docs[0]))
	assert.Equal(t, 2, strings.Count(log.String(), "Testing max_concurrency: 8"), "probed twice")
	assert.Regexp(t, `(?m)^max_concurrency=8 +discarded \(try 1 of 3, not scored\): \d+ of 32 requests failed \(http_5xx \d+(, [a-z_]+ \d+)*\): the server was unreachable or restarting$`, out.String())
	assert.Regexp(t, `(?m)^max_concurrency=8 .*PASSED$`, out.String())
}

func docJSON(d loadgen.ResultDoc) string { b, _ := d.MarshalJSON(); return string(b) }
