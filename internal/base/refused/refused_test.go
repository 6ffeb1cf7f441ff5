package refused

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

func TestAddrRefusesAndStaysTaken(t *testing.T) {
	addr := Addr(t)
	for range 50 {
		_, err := net.DialTimeout("tcp", addr, time.Second)
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial %s: %v, want connection refused", addr, err)
		}
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("%s could be listened on while held", addr)
	}
}
