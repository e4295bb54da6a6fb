package transport

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/rawsock"
)

// writesConn records each Write.
type writesConn struct {
	net.Conn
	writes [][]byte
}

func (c *writesConn) Write(b []byte) (int, error) {
	c.writes = append(c.writes, bytes.Clone(b))
	return len(b), nil
}

func (c *writesConn) SetWriteDeadline(time.Time) error { return nil }

// A stream frame leaves in one write, its length header and its bytes
// together: one segment and one system call, not two (net.Buffers wrote
// them with writev; a raw connection takes one buffer).
func TestLinkWritesOneBuffer(t *testing.T) {
	l := &link{e: &endpoint{cfg: Config{Stream: StreamConfig{WriteTimeout: time.Second}}}}
	c := &writesConn{}
	if err := l.write(c, []byte("frame")); err != nil {
		t.Fatal(err)
	}
	if len(c.writes) != 1 {
		t.Fatalf("%d writes for one frame, want 1", len(c.writes))
	}
	want := binary.BigEndian.AppendUint32(nil, 5)
	want = append(want, "frame"...)
	if !bytes.Equal(c.writes[0], want) {
		t.Fatalf("wrote %q, want %q", c.writes[0], want)
	}
}

// The real fabric's stream connections, dialled and accepted, read and
// write with raw system calls (internal/rawsock), which wake no runtime
// monitor thread.
func TestStreamConnsAreRaw(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("raw connections are Linux's")
	}
	k := &kit{t: t, real: true}
	a := k.open(Config{Listen: k.addr(1)})
	e := a.(*endpoint)
	s := e.fab.(*sockets)
	c, err := s.dial(t.Context(), netip.MustParseAddrPort(s.ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*rawsock.Conn); !ok {
		t.Fatalf("dialled a %T, want a *rawsock.Conn", c)
	}
	// The accepting end: admitted connections are kept in e.inbound.
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		e.mu.Lock()
		var got []net.Conn
		for ic := range e.inbound {
			got = append(got, ic)
		}
		e.mu.Unlock()
		if len(got) > 0 {
			if _, ok := got[0].(*rawsock.Conn); !ok {
				t.Fatalf("accepted a %T, want a *rawsock.Conn", got[0])
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the dialled connection was never admitted")
}
