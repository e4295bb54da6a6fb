//go:build !linux

package transport

import (
	"errors"
	"syscall"
	"time"
)

var oobSize = 0

// enableRxTimestamps is Linux only; elsewhere every packet is stamped in
// user space (Packet.Kernel false).
func enableRxTimestamps(syscall.RawConn) error {
	return errors.New("transport: kernel receive timestamps are only supported on Linux")
}

func parseRxTimestamp([]byte) (time.Time, bool) { return time.Time{}, false }
