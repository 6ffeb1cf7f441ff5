package main

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server whose numbers are 1e308, NaN and infinities gets a table of short numbers and
// JSON that parses.
func TestMetricsOfHostileNumbers(t *testing.T) {
	noKeyEnv(t)
	srv := serveBodies(t, readFixture(t, "hostile/metrics/huge-values.prom"))
	longDigits := regexp.MustCompile(`[0-9]{16,}`)

	code, out, errOut := metrics(t, srv.URL)
	require.Equal(t, 0, code, errOut)
	assert.NotRegexp(t, longDigits, out)
	assert.Contains(t, out, "hostile/model")
	assert.Contains(t, out, "E2E 3.33e+307 s", "a mean past what a Duration holds")
	assertFits(t, out)

	code, out, errOut = metrics(t, "--json", srv.URL)
	require.Equal(t, 0, code, errOut)
	assert.True(t, json.Valid([]byte(out)), "--json output parses")
	assert.NotRegexp(t, longDigits, out)
}
