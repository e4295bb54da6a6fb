//go:build !linux

package transport

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// setUserTimeout is Linux only; elsewhere keepalive alone detects dead peers.
func setUserTimeout(syscall.RawConn, time.Duration) error {
	return errors.ErrUnsupported
}

// listenGroup binds the group's port (on the wildcard address: elsewhere
// the standard library's choice is kept).
func listenGroup(group netip.AddrPort) (*net.UDPConn, error) {
	pc, err := net.ListenPacket("udp4", group.String())
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}

// setBroadcast is Linux only here: elsewhere broadcast sends fail.
func setBroadcast(syscall.RawConn) error { return errors.ErrUnsupported }

// drainQueued is Linux only: elsewhere a superseded connection's kernel
// backlog is discarded uncounted.
func drainQueued(net.Conn, func([]byte)) {}
