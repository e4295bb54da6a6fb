//go:build !linux

package transport

import (
	"errors"
	"syscall"
	"time"
)

// setReuse: several nodes sharing a multicast group on one host is a Linux
// lab setup; elsewhere the group socket is exclusive.
func setReuse(_, _ string, _ syscall.RawConn) error { return nil }

// setUserTimeout is Linux only; elsewhere keepalive alone detects dead peers.
func setUserTimeout(syscall.RawConn, time.Duration) error {
	return errors.ErrUnsupported
}
