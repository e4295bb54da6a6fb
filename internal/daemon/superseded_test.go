package daemon

import (
	"encoding/binary"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/syncbuf"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/wire"
)

// TestSupersedeThrashWarned (end to end, real sockets on loopback): a
// daemon whose member 2 is at 127.0.0.72, and another process that dials
// its port from that IP again and again, a frame on each connection.
// Frames of another cluster (its member on this port) supersede nothing:
// they fail what the node checks, so the connections they came on stay
// open and nothing is said. Frames of this cluster in member 2's name
// with the key (a second daemon started by hand on member 2's host) do:
// each new connection's frame resets the one before. Past
// transport.SupersedeThrash within the window, the daemon says at WARN
// which member, its IP, how many and the frames lost, the likely causes
// and what to do; status lists the member under superseding with the same
// cause. Driven by counts: each dial waits for the reset of the one
// before, or for the refusal to be counted.
func TestSupersedeThrashWarned(t *testing.T) {
	self, other := freePortOn(t, "127.0.0.71"), netip.MustParseAddrPort("127.0.0.72:7999")
	cfg := testConfig(t, nil, shortDir(t), 1, 2)
	cfg.Network = nil // real sockets
	cfg.Members = map[uint32]netip.AddrPort{1: self, 2: other}
	var logged syncbuf.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	d, err := New(cfg, livenessFactory(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	sealer := wire.NewSealer(testKey)
	seq := uint64(0)
	frame := func(cluster uint32) []byte {
		seq++
		f := wire.Frame{Header: wire.Header{Kind: wire.KindHeartbeat, Cluster: cluster, Sender: 2, Receiver: 1, Seq: wire.Seq(1, 0, uint32(seq))}}
		raw, err := f.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		return sealer.Seal(raw)
	}
	dial := func(b []byte) net.Conn {
		t.Helper()
		dl := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IP(other.Addr().AsSlice())}}
		c, err := dl.Dial("tcp4", self.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	ours := wire.ServiceClusterID(cfg.Name, cfg.Cluster)
	for i := range transport.SupersedeThrash + 2 {
		dial(frame(ours + 1))
		eventually(t, "the other cluster's frame refused", func() bool {
			return status(t, cfg.ControlPath).Transport.NotSuperseding == uint64(i+1)
		})
	}
	if st := status(t, cfg.ControlPath); st.Transport.InboundSuperseded != 0 || st.Transport.Inbound != transport.DefaultPerPeerConns {
		t.Fatalf("another cluster's connections: %d superseded, %d open, want none and %d (the newest, the oldest evicted)",
			st.Transport.InboundSuperseded, st.Transport.Inbound, transport.DefaultPerPeerConns)
	}
	var prev net.Conn
	for i := range transport.SupersedeThrash + 2 {
		c := dial(frame(ours))
		if prev != nil {
			prev.SetReadDeadline(time.Now().Add(hangGuard))
			if _, err := prev.Read(make([]byte, 1)); err == nil || isTimeout(err) {
				t.Fatalf("connection %d not reset by connection %d's frame: %v", i-1, i, err)
			}
		}
		prev = c
	}
	eventually(t, "the WARN", func() bool { return strings.Contains(logged.String(), "keep being reset") })
	var line string
	for _, l := range strings.Split(logged.String(), "\n") {
		if strings.Contains(l, "keep being reset") {
			line = l
			break
		}
	}
	t.Log(line)
	for _, want := range []string{"level=WARN", "member 2 (127.0.0.72)", "more than 10 within 1m0s", "condition=superseded", "member=2",
		"peer=127.0.0.72", "frames_lost=", "a second daemon of that member started by hand", "ss -tnp", "--members"} {
		if !strings.Contains(line, want) {
			t.Errorf("the WARN lacks %q:\n%s", want, line)
		}
	}
	st := status(t, cfg.ControlPath)
	if len(st.Superseding) != 1 {
		t.Fatalf("status superseding %+v, want member 2", st.Superseding)
	}
	s := st.Superseding[0]
	if s.Member != 2 || s.Peer.Addr() != other.Addr() || !s.Thrashing || s.Connections < transport.SupersedeThrash+1 || s.Last.IsZero() ||
		!strings.Contains(s.Cause, "another process") || !strings.Contains(s.Hint, "ss -tnp") {
		t.Fatalf("status superseding %+v", s)
	}
	if st.Transport.InboundSuperseded != s.Connections || s.Connections < transport.SupersedeThrash+1 {
		t.Fatalf("superseded %d in all, %d for member 2", st.Transport.InboundSuperseded, s.Connections)
	}
}

// freePortOn is a TCP port free on ip now (the daemon binds it next).
func freePortOn(t *testing.T, ip string) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp4", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return netip.MustParseAddrPort(ln.Addr().String())
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
