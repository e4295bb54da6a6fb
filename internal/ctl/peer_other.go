//go:build !linux

package ctl

import (
	"errors"
	"net"
)

// peerCredentials fails where SO_PEERCRED does not exist: the server then
// refuses every connection rather than trust the file mode alone.
func peerCredentials(net.Conn) (Peer, error) {
	return Peer{}, errors.New("peer credentials are only implemented on Linux")
}
