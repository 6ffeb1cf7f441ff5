//go:build unix

package refused

import (
	"fmt"
	"net"
	"syscall"
)

// hold binds a TCP socket to a free loopback port without listening: a connect there is
// refused, and no other socket can take the port (no SO_REUSEADDR) while it is held.
func hold() (string, func(), error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return released()
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return "", nil, fmt.Errorf("bind: %w", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return "", nil, fmt.Errorf("getsockname: %w", err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		syscall.Close(fd)
		return "", nil, fmt.Errorf("unexpected socket address %T", sa)
	}
	addr := (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: in4.Port}).String()
	return addr, func() { syscall.Close(fd) }, nil
}
