package ctl

import (
	"net"

	"github.com/synclab/synclab/internal/rawsock"
)

// rawListener hands out connections whose reads and writes do not wake
// the runtime's monitor thread (internal/rawsock): a control call to an
// idle daemon costs one thread wake-up, not two.
type rawListener struct {
	*net.UnixListener
}

func (l rawListener) Accept() (net.Conn, error) {
	c, err := l.AcceptUnix()
	if err != nil {
		return nil, err
	}
	return rawsock.Wrap(c), nil
}
