package transport

import (
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseRxTimestamp(t *testing.T) {
	cmsg := func(level, typ int32, data []byte) []byte {
		b := make([]byte, unix.CmsgSpace(len(data)))
		ne := binary.NativeEndian
		if unix.SizeofCmsghdr == 16 {
			ne.PutUint64(b, uint64(unix.CmsgLen(len(data))))
			ne.PutUint32(b[8:], uint32(level))
			ne.PutUint32(b[12:], uint32(typ))
		} else {
			ne.PutUint32(b, uint32(unix.CmsgLen(len(data))))
			ne.PutUint32(b[4:], uint32(level))
			ne.PutUint32(b[8:], uint32(typ))
		}
		copy(b[unix.CmsgLen(0):], data)
		return b
	}
	ts := make([]byte, 16)
	binary.NativeEndian.PutUint64(ts, 1_700_000_000)
	binary.NativeEndian.PutUint64(ts[8:], 123_456_789)
	want := time.Unix(1_700_000_000, 123_456_789)

	other := cmsg(unix.SOL_IP, unix.IP_TTL, []byte{64, 0, 0, 0})
	stamp := cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, ts)
	for name, oob := range map[string][]byte{"alone": stamp, "after another": append(other, stamp...)} {
		if got, ok := parseRxTimestamp(oob); !ok || !got.Equal(want) {
			t.Errorf("%s: %v %v", name, got, ok)
		}
	}
	for name, oob := range map[string][]byte{
		"empty":     nil,
		"other":     other,
		"truncated": stamp[:len(stamp)-4],
		"short hdr": stamp[:unix.SizeofCmsghdr-1],
	} {
		if got, ok := parseRxTimestamp(oob); ok {
			t.Errorf("%s: parsed %v", name, got)
		}
	}
}
