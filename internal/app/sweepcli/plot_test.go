package sweepcli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The axes reach 5% past the data at each end, as matplotlib's margins do, so that the
// points at the ends are drawn whole; on a log axis, 5% of its decades; and values a log axis
// cannot place are left out.
func TestPlotAxesLeaveRoomAroundThePoints(t *testing.T) {
	recs := []Record{
		{"x": json.Number("10"), "y": json.Number("0")},
		{"x": json.Number("20"), "y": json.Number("100")},
		{"x": json.Number("110"), "y": json.Number("1000")},
	}
	p, n, err := PlotArgs{VarX: "x", VarY: "y"}.panel(recs, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.InDelta(t, 10-5, p.X.Min, 1e-9)
	assert.InDelta(t, 110+5, p.X.Max, 1e-9)
	assert.InDelta(t, -50, p.Y.Min, 1e-9)
	assert.InDelta(t, 1050, p.Y.Max, 1e-9)

	p, n, err = PlotArgs{VarX: "x", VarY: "y", ScaleY: "log"}.panel(recs, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "y = 0 has no place on a log axis")
	assert.InDelta(t, 100/1.122, p.Y.Min, 0.1) // 10^(0.05 x 1 decade)
	assert.InDelta(t, 1000*1.122, p.Y.Max, 1)
}
