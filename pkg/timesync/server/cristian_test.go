package server

import (
	"bytes"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/cristian"
	"github.com/synclab/synclab/pkg/wire"
)

var (
	labCluster = wire.ClusterID("lab")
	frameKey   = wire.Key{ID: 5, Secret: bytes.Repeat([]byte{9}, 32)}
)

// timeRequest is a Cristian request as the daemon would send it: transmit
// timestamp patched, sealed when k is given.
func timeRequest(cluster uint32, k *wire.Key) []byte {
	b, err := cristian.RequestFrame(cluster, 42)
	if err != nil {
		panic(err)
	}
	wire.PatchXmt(b, t1)
	if k != nil {
		b = wire.Seal(b, *k)
	}
	return b
}

func TestCristianAnswered(t *testing.T) {
	s := newServer(t, Config{LocalStratum: 8, Cristian: CristianConfig{ID: 1, Cluster: labCluster, Keys: []wire.Key{frameKey}}})
	req := timeRequest(labCluster, &frameKey)
	if err := s.StepDatagram(core.Datagram{Addr: clientAddr, Data: req, Time: t0}); err != nil {
		t.Fatal(err)
	}
	out := s.Ready().Datagrams
	if len(out) != 1 || !out[0].Frame || out[0].Addr != clientAddr {
		t.Fatalf("out = %+v", out)
	}
	// Sealed by the daemon: the queued bytes are one trailer shorter than
	// what will leave, which is exactly the request's length.
	if got := len(out[0].Data) + wire.AuthTrailerLen; got != len(req) {
		t.Errorf("reply will be %d bytes, request %d", got, len(req))
	}
	var f wire.Frame
	if err := f.UnmarshalBinary(out[0].Data); err != nil {
		t.Fatal(err)
	}
	var r wire.TimeReply
	if err := r.UnmarshalBinary(f.Payload); err != nil {
		t.Fatal(err)
	}
	if f.Kind != wire.KindTimeReply || f.Sender != 1 || f.Receiver != 42 || f.Cluster != labCluster {
		t.Errorf("reply header %+v", f.Header)
	}
	if r.Origin != t1 || r.Stratum != 8 || r.Leap != wire.LeapNone || r.ReferenceID != LocalRefID {
		t.Errorf("reply %+v", r)
	}
	if st := s.Report(); st.CristianRequests != 1 || st.CristianReplies != 1 || st.Requests != 0 {
		t.Errorf("counters %+v", st)
	}
}

func TestCristianUnsynchronisedSaysSo(t *testing.T) {
	s := newServer(t, Config{Cristian: CristianConfig{ID: 1, Cluster: labCluster}})
	if err := s.StepDatagram(core.Datagram{Addr: clientAddr, Data: timeRequest(labCluster, nil), Time: t0}); err != nil {
		t.Fatal(err)
	}
	out := s.Ready().Datagrams
	var f wire.Frame
	var r wire.TimeReply
	if len(out) != 1 || f.UnmarshalBinary(out[0].Data) != nil || r.UnmarshalBinary(f.Payload) != nil {
		t.Fatalf("out = %+v", out)
	}
	if r.Leap != wire.LeapNotInSync || r.Stratum != wire.StratumUnsynchronized {
		t.Errorf("unsynchronised server answered leap %d stratum %d", r.Leap, r.Stratum)
	}
}

func TestCristianDrops(t *testing.T) {
	forged := timeRequest(labCluster, &frameKey)
	forged[len(forged)-1] ^= 1
	nonzero := timeRequest(labCluster, nil)
	nonzero[wire.HeaderLen] = 1
	cases := []struct {
		name   string
		cfg    CristianConfig
		data   []byte
		reason string
	}{
		{"disabled", CristianConfig{}, timeRequest(labCluster, nil), dropCristianOff},
		{"other cluster", CristianConfig{ID: 1, Cluster: labCluster}, timeRequest(wire.ClusterID("other"), nil), "cristian_wrong_cluster"},
		{"no MAC", CristianConfig{ID: 1, Cluster: labCluster, Keys: []wire.Key{frameKey}}, timeRequest(labCluster, nil), "cristian_no_mac"},
		{"bad MAC", CristianConfig{ID: 1, Cluster: labCluster, Keys: []wire.Key{frameKey}}, forged, "cristian_bad_mac"},
		{"truncated", CristianConfig{ID: 1, Cluster: labCluster}, timeRequest(labCluster, nil)[:wire.HeaderLen+3], dropCristianMalformed},
		{"reserved bytes", CristianConfig{ID: 1, Cluster: labCluster}, nonzero, dropCristianMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, Config{LocalStratum: 8, Cristian: c.cfg})
			if err := s.StepDatagram(core.Datagram{Addr: clientAddr, Data: c.data, Time: t0}); err == nil {
				t.Fatal("answered")
			}
			if st := s.Report(); st.Dropped[c.reason] != 1 || st.CristianReplies != 0 || len(s.Ready().Datagrams) != 0 {
				t.Errorf("dropped %v, want %q", st.Dropped, c.reason)
			}
		})
	}
}

func TestCristianRateLimited(t *testing.T) {
	s := newServer(t, Config{LocalStratum: 8, RateLimit: RateLimit{Interval: time.Second, Burst: 2},
		Cristian: CristianConfig{ID: 1, Cluster: labCluster}})
	answered := 0
	for i := range 5 {
		if s.StepDatagram(core.Datagram{Addr: clientAddr, Data: timeRequest(labCluster, nil), Time: t0.Add(time.Duration(i) * time.Millisecond)}) == nil {
			answered++
		}
	}
	if answered != 2 || s.Report().Dropped[dropRateLimited] != 3 {
		t.Errorf("answered %d of 5 back-to-back requests with a burst of 2; dropped %v", answered, s.Report().Dropped)
	}
}
