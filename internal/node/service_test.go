package node

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// TestAnotherServicesFrameRefused: the daemons of a lab host share one
// key file (/etc/synclab/cluster.key) and, by default, the cluster name
// "synclab", and host 3 is member 3 of each. A student records one
// authentic frame of electd on host 3 and sends it to mutexd on host 2
// from mutexd's member-3 address (spoofed source). Without the service
// in the cluster ID it passed every check, and its sequence number (of
// electd's incarnation, ahead of mutexd's) moved mutexd 2's window for
// member 3 past mutexd 3's real frames: those were refused as stale, the
// ring took member 3 for gone, until mutexd 3 restarted enough times
// (and the new epoch was persisted, so a restart of host 2 did not
// help). Now the frame is another cluster's: refused, counted, and the
// window untouched.
func TestAnotherServicesFrameRefused(t *testing.T) {
	ports := func(port uint16) map[uint32]netip.AddrPort {
		m := map[uint32]netip.AddrPort{}
		for id := uint32(1); id <= 3; id++ {
			m[id] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(10 + id)}), port)
		}
		return m
	}
	electdMembers, mutexdMembers := ports(7200), ports(7100)
	start := func(service string, id, inc uint32, members map[uint32]netip.AddrPort) (*Node, *recorder) {
		r := &recorder{}
		n, err := New(Config{ID: id, Members: members, Cluster: "synclab", Service: service, Keys: []wire.Key{testKey}, Incarnation: inc}, r)
		if err != nil {
			t.Fatal(err)
		}
		return n, r
	}
	electd3, electdCore := start("electd", 3, 9, electdMembers) // restarted more often than mutexd
	mutexd3, mutexd3Core := start("mutexd", 3, 2, mutexdMembers)
	mutexd2, mutexd2Core := start("mutexd", 2, 2, mutexdMembers)

	// sendTo takes from's next frame addressed to member 2 (at its
	// cluster's address).
	sendTo := func(from *Node, to netip.AddrPort, now time.Time) []byte {
		t.Helper()
		for _, s := range from.Ready().Sends {
			if s.To == to {
				return from.Finalize(s, now)
			}
		}
		t.Fatal("no frame for member 2")
		return nil
	}
	heartbeat := []core.Message{{To: core.Broadcast, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}

	now := t0
	mutexd3Core.rd.Messages = heartbeat
	if err := mutexd2.Receive(Inbound{From: mutexdMembers[3], Data: sendTo(mutexd3, mutexdMembers[2], now), Time: now}); err != nil {
		t.Fatalf("mutexd 3's frame refused: %v", err)
	}

	// The recording: electd 3's heartbeat to electd 2, sent to mutexd 2
	// from mutexd 3's address.
	now = now.Add(50 * time.Millisecond)
	electdCore.rd.Messages = heartbeat
	recorded := sendTo(electd3, electdMembers[2], now)
	err := mutexd2.Receive(Inbound{From: mutexdMembers[3], Data: recorded, Time: now})
	if !errors.Is(err, wire.ErrWrongCluster) {
		t.Fatalf("electd's frame at mutexd: %v, want %v", err, wire.ErrWrongCluster)
	}
	if got := mutexd2.Status().Dropped["wrong_cluster"]; got != 1 {
		t.Errorf("dropped[wrong_cluster] = %d, want 1", got)
	}
	if n := len(mutexd2Core.steps); n != 1 {
		t.Errorf("mutexd 2's core stepped %d times, want 1 (electd's frame never reaches it)", n)
	}

	// mutexd 3's real frames are still taken.
	for i := range 3 {
		now = now.Add(50 * time.Millisecond)
		mutexd3Core.rd.Messages = heartbeat
		if err := mutexd2.Receive(Inbound{From: mutexdMembers[3], Data: sendTo(mutexd3, mutexdMembers[2], now), Time: now}); err != nil {
			t.Fatalf("mutexd 3's frame %d after the recording refused: %v", i+2, err)
		}
	}

	// The same service in another cluster, and no service at all, are
	// other IDs too; no service is the cluster name's own ID.
	if wire.ServiceClusterID("mutexd", "synclab") == wire.ServiceClusterID("electd", "synclab") ||
		wire.ServiceClusterID("mutexd", "synclab") == wire.ServiceClusterID("mutexd", "synclab2") ||
		wire.ServiceClusterID("mutexd", "synclab") == wire.ClusterID("synclab") ||
		wire.ServiceClusterID("", "synclab") != wire.ClusterID("synclab") {
		t.Error("service cluster IDs collide")
	}
}
