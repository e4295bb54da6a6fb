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

// enableTxTimestamps is Linux only; elsewhere transmit times are the
// user-space clock reading taken right before the write.
func enableTxTimestamps(syscall.RawConn) error {
	return errors.New("transport: kernel transmit timestamps are only supported on Linux")
}

// txReader is Linux only: no socket has transmit stamps on elsewhere.
type txReader struct{}

func newTxReader(syscall.RawConn) *txReader { return &txReader{} }

func (*txReader) read(uint32, []int, int, []TxStamp) bool { return false }

func (*txReader) reset() error { return nil }

// txStampOOB is never sent: without kernel transmit stamps no socket has
// them enabled.
var txStampOOB []byte

// txStampsOffered: no kernel transmit stamps here, and none missed.
const txStampsOffered = false
