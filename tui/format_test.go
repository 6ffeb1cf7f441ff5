package tui

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestJoinFit(t *testing.T) {
	parts := []string{"load C=4", "KV 464,720 tok · max conc 3.55x", "weights 14.99 GiB", "vLLM 0.26.0"}
	prio := []int{0, 2, 5, 6}
	for _, tc := range []struct {
		width int
		want  string
	}{
		{80, "load C=4 · KV 464,720 tok · max conc 3.55x · weights 14.99 GiB · vLLM 0.26.0"},
		{70, "load C=4 · KV 464,720 tok · max conc 3.55x · weights 14.99 GiB"},
		{45, "load C=4 · KV 464,720 tok · max conc 3.55x"},
		// The KV item does not fit: nothing less important takes its place.
		{35, "load C=4"},
		{4, ""}, // a part is left out whole, never cut
	} {
		assert.Equal(t, tc.want, joinFit(parts, prio, " · ", tc.width), "width %d", tc.width)
	}
}

func TestSpansReadAsMinutesAndSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		40 * time.Second: "40s", time.Minute: "1m", 191 * time.Second: "3m11s", 5 * time.Minute: "5m",
		3599 * time.Second: "59m59s", time.Hour: "1h", 3601 * time.Second: "1h00m01s", 90 * time.Minute: "1h30m",
		2*time.Hour + 5*time.Second: "2h00m05s", 1500 * time.Millisecond: fmtDur(1500 * time.Millisecond),
	} {
		assert.Equal(t, want, fmtSpan(d), d)
	}
}
