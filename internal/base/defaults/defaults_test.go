package defaults

import (
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	if got := Positive(0, 5); got != 5 {
		t.Errorf("Positive(0, 5) = %d, want 5", got)
	}
	if got := Positive(-1*time.Second, time.Minute); got != time.Minute {
		t.Errorf("Positive(-1s, 1m) = %v, want 1m", got)
	}
	if got := Positive(2.5, 1); got != 2.5 {
		t.Errorf("Positive(2.5, 1) = %g, want 2.5", got)
	}
}
