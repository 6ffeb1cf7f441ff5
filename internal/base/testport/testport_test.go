package testport

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeIsBindableAndDistinct(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		p := Free(t)
		if p < lo || p >= hi {
			t.Fatalf("port %d outside [%d, %d)", p, lo, hi)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		ln.Close()
	}
}

func TestFreeSkipsABusyPort(t *testing.T) {
	p := Free(t)
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+1))
	if err != nil {
		t.Skipf("the next port is taken already: %v", err)
	}
	defer ln.Close()
	if q := Free(t); q == p+1 {
		t.Fatalf("Free handed out %d, which is listened on", q)
	}
}
