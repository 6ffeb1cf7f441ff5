package scrape

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteTextWindowAndFit(t *testing.T) {
	body, err := os.ReadFile("../testdata/vllm-metrics-synthetic-multiprocess-dp2.txt")
	require.NoError(t, err)
	snap, err := Parse(bytes.NewReader(body))
	require.NoError(t, err)
	later := snap
	win := Compare(&snap, &later)
	var b strings.Builder
	WriteText(&b, "http://h:8000/metrics", &later, &win, time.Now())
	out := b.String()
	assert.True(t, strings.HasPrefix(out, "http://h:8000/metrics  (vllm"), out)
	assert.Contains(t, out, "\nwindow         over the last ")
	assert.Contains(t, out, "\n  engine ", "a row per data-parallel engine")
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(l), 80, "%q", l)
	}

	b.Reset()
	empty, err := Parse(strings.NewReader("# HELP other_metric x\n# TYPE other_metric gauge\nother_metric 1\n"))
	require.NoError(t, err)
	WriteText(&b, "http://h", &empty, nil, time.Now())
	assert.Contains(t, b.String(), "no vLLM, SGLang or TGI metrics; 1 families")
}

func TestCountGroupsDigits(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 464720: "464,720", -1234: "-1,234", 2.5: "2.50", 1e15: "1e+15"} {
		assert.Equal(t, want, count(Some(v)), "%g", v)
	}
	assert.Equal(t, "--", count(Value{}))
}

func TestErrorHints(t *testing.T) {
	for _, c := range []struct {
		err     *Error
		haveKey bool
		want    string
	}{
		{&Error{StatusCode: 401}, false, "; the server wants an API key (--api-key, or OPENAI_API_KEY or VLLM_API_KEY)"},
		{&Error{StatusCode: 403}, true, "; the server refused the API key"},
		{&Error{StatusCode: 404}, false, "; no metrics at this path (give the server's base URL or its /metrics URL)"},
		{&Error{Err: fmt.Errorf("dial: %w", syscall.ECONNREFUSED)}, false, "; is the server running, on this host and port?"},
		{&Error{Err: fmt.Errorf("tls: %w", x509.UnknownAuthorityError{})}, false, "; trust its CA with --ca-file, or skip verification with --insecure"},
		{&Error{Err: context.DeadlineExceeded}, false, "; the server is slow or stuck (--timeout raises the limit)"},
		{&Error{StatusCode: 500, Err: errors.New("boom")}, false, ""},
	} {
		assert.Equal(t, c.want, c.err.Hint(c.haveKey), "%+v", c.err)
	}
}
