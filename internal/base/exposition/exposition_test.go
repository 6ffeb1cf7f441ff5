package exposition

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const sample = `# TYPE g gauge
g{engine="0",model_name="m"} 1.0
g{engine="1",model_name="m"} 2.0
# TYPE h histogram
h_bucket{engine="0",le="0.1"} 3.0
h_bucket{engine="0",le="1.0"} 5.0
h_bucket{engine="0",le="+Inf"} 6.0
h_count{engine="0"} 6.0
h_sum{engine="0"} 4.5`

func TestEdits(t *testing.T) {
	out := Set(sample, "g", 7, `engine="1"`)
	assert.Contains(t, out, `g{engine="0",model_name="m"} 1.0`)
	assert.Contains(t, out, `g{engine="1",model_name="m"} 7`)
	out = Add(sample, "g", 0.5)
	assert.Contains(t, out, `g{engine="0",model_name="m"} 1.5`)
	assert.Contains(t, out, `g{engine="1",model_name="m"} 2.5`)
	out = Observe(sample, "h", 0.5, 10)
	assert.Contains(t, out, `h_bucket{engine="0",le="0.1"} 3`)
	assert.Contains(t, out, `h_bucket{engine="0",le="1.0"} 15`)
	assert.Contains(t, out, `h_bucket{engine="0",le="+Inf"} 16`)
	assert.Contains(t, out, `h_count{engine="0"} 16`)
	assert.Contains(t, out, `h_sum{engine="0"} 9.5`)
}
