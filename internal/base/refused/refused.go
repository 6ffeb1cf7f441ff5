// Package refused gives tests an address where a connection is refused for as long as the test
// runs.
//
// Closing a listener and dialling its port is not enough: once released, the kernel may hand the
// port to a server another test starts, or pick it as the source port of the dial itself (a TCP
// self-connect), and the "refused" connection then talks to something.
package refused

import (
	"net"
	"testing"
)

// Addr is "127.0.0.1:port" for a port bound but never listened on, held until the test ends.
func Addr(tb testing.TB) string {
	tb.Helper()
	addr, release, err := hold()
	if err != nil {
		tb.Fatalf("refused address: %v", err)
	}
	tb.Cleanup(release)
	return addr
}

// released is the fallback where a bound socket cannot be held: a listener's port, let go.
func released() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	return addr, func() {}, ln.Close()
}
