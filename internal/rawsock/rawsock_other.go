//go:build !linux

package rawsock

import "net"

// Conn is only a net.Conn where the raw calls are not wired in.
type Conn struct {
	net.Conn
}

// Wrap returns c: net's own reads and writes.
func Wrap(c net.Conn) net.Conn { return c }
