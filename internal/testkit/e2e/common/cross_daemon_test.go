package common

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/forge"
	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/testenv"
	"github.com/synclab/synclab/pkg/wire"
)

// TestCrossDaemonReplayRefused: the daemons of a lab host read one key
// file and speak in the cluster "synclab" by default, and host 3 is member
// 3 of each. A student records an authentic frame of electd on host 3 and
// sends it to mutexd on host 2 from mutexd's member-3 address. On main it
// passed mutexd's cluster, member, source and MAC checks, and its sequence
// number (electd's incarnation: electd had been restarted later) moved
// mutexd 2's window for member 3 past mutexd 3's real frames: those were
// refused as stale, mutexd 2 took member 3 for dead (the ring then routes
// around a live member) for as long as mutexd 3 did not restart. Now each
// daemon's frames carry its own cluster ID: the recording is another
// cluster's frame, refused and counted, and nothing else changes.
func TestCrossDaemonReplayRefused(t *testing.T) {
	testenv.RequireRoot(t, "sending from member 3's address needs a raw socket")
	m := newCluster(t, "mutexd", 3)
	for i := 1; i <= 3; i++ {
		m.Start(i, "--heartbeat", "100ms")
	}
	m.Eventually("mutexd 2 sees both others alive", 10*time.Second, func() bool { return m.Alive(2) == 2 })

	// electd on the same three hosts, with the same key; its member 2 is
	// the student's recorder (electd 2 need not run: electd 3 sends to
	// it anyway). electd 3 was restarted later than mutexd 3, so its
	// incarnation is higher: what a lab sees after any restart.
	e := newCluster(t, "electd", 3)
	e.Key = m.Key
	rec, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 32)})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	e.Members = fmt.Sprintf("1=127.0.0.31:%d,2=%s,3=127.0.0.33:%d",
		e2e.FreePort(t, "127.0.0.31"), rec.LocalAddr(), e2e.FreePort(t, "127.0.0.33"))
	state := filepath.Join(e.Dir, "h3.state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	later := uint64(time.Since(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))/time.Minute) + 1000
	if err := os.WriteFile(filepath.Join(state, "incarnation"), []byte(fmt.Sprintln(later)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Start(3, "--heartbeat", "100ms")

	var recorded []byte
	rec.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, wire.MaxFrameLen)
	for recorded == nil {
		n, _, err := rec.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("no frame of electd 3 recorded: %v", err)
		}
		var f wire.Frame
		if f.UnmarshalBinary(buf[:n]) == nil && f.Sender == 3 && f.Flags&wire.FlagAuth != 0 {
			recorded = append([]byte(nil), buf[:n]...)
		}
	}

	addr := func(c *cluster, id int) netip.AddrPort {
		for _, kv := range strings.Split(c.Members, ",") {
			if k, v, _ := strings.Cut(kv, "="); k == fmt.Sprint(id) {
				return netip.MustParseAddrPort(v)
			}
		}
		t.Fatalf("no member %d in %s", id, c.Members)
		return netip.AddrPort{}
	}
	dropped := func(reason string) float64 {
		st, err := m.Status(2)
		if err != nil {
			return -1
		}
		d, _ := st["node"].(map[string]any)["dropped"].(map[string]any)
		v, _ := d[reason].(float64)
		return v
	}
	staleBefore := dropped("stale")
	for range 3 {
		if err := forge.SendSpoofedUDP(addr(m, 3), addr(m, 2), recorded); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	m.Eventually("mutexd 2 counts electd's frames as another cluster's", 5*time.Second, func() bool { return dropped("wrong_cluster") >= 3 })
	// Ten of mutexd's heartbeats, three times its failure detector's
	// silence: member 3 stays alive and its frames are all taken.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if n := m.Alive(2); n != 2 {
			t.Fatalf("mutexd 2 sees %d others alive after the recording, want 2 (stale refused: %v)", n, dropped("stale")-staleBefore)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s := dropped("stale") - staleBefore; s != 0 {
		t.Errorf("mutexd 2 refused %v of mutexd 3's frames as stale after the recording", s)
	}
}
