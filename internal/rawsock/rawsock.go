package rawsock

import "net"

// Unwrap returns the connection under c, if c is a *Conn; else c.
func Unwrap(c net.Conn) net.Conn {
	if rc, ok := c.(*Conn); ok {
		return rc.Conn
	}
	return c
}
