// Package testport hands tests loopback ports for servers they start in child processes.
package testport

import (
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
)

// The ports Free hands out lie below Linux's ephemeral range (32768 on), where the listeners
// other tests open on port 0 never land, so none of them can take a port between Free's check
// and the child's bind.
const lo, hi = 20000, 32000

// next walks the range from a start that differs between test processes.
var next atomic.Int32

// Free is a loopback TCP port nothing listens on now.
func Free(t testing.TB) int {
	t.Helper()
	next.CompareAndSwap(0, int32(lo+os.Getpid()%(hi-lo)))
	for range hi - lo {
		p := lo + (int(next.Add(1))-lo)%(hi-lo)
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			ln.Close()
			return p
		}
	}
	t.Fatal("testport: no free port below the ephemeral range")
	return 0
}
