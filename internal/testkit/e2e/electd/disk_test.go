package electd

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/forge"
	"github.com/synclab/synclab/internal/testkit/testenv"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/wire"
)

// TestElectdFailingDisk runs a real electd whose state directory is a tiny
// tmpfs, filled up and then made read-only, and plays its only peer
// itself: a lower-ranked member that claims newer terms, which electd, the
// higher-ranked, must take back with a claim of its own, a term it must
// persist before it announces it. The issue: the daemon withheld the
// Ready whose write failed, but the core forgot its term was unsaved and
// heartbeated it anyway. Now, while the disk fails, no frame leaves with a
// term above the one on disk, and once it works again the pending term is
// written and announced. Needs root (mount): skipped otherwise, a failure
// in CI (testenv).
func TestElectdFailingDisk(t *testing.T) {
	testenv.RequireRoot(t, "mounting a tmpfs for the state directory needs root")
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		testenv.Unavailable(t, "cannot mount a tmpfs for the state directory: %v: %s", err, bytes.TrimSpace(out))
	}
	state := filepath.Join(mnt, "electd")
	t.Cleanup(func() {
		exec.Command("umount", "-l", state).Run() // the read-only bind, if still there
		exec.Command("umount", "-l", mnt).Run()
	})

	c := newCluster(t, "electd", 2)
	peer := netip.MustParseAddrPort(strings.TrimPrefix(strings.Split(c.Members, ",")[0], "1="))
	self := netip.MustParseAddrPort(strings.TrimPrefix(strings.Split(c.Members, ",")[1], "2="))
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(peer))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c.Extra[2] = []string{"--state-dir", state}
	c.Start(2)

	// frames reads what electd sends member 1 for d, and the highest term.
	frames := func(d time.Duration) (n int, top uint64) {
		buf := make([]byte, 2048)
		for end := time.Now().Add(d); time.Now().Before(end); {
			conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			k, err := conn.Read(buf)
			if err != nil {
				continue
			}
			var f wire.Frame
			if f.UnmarshalBinary(buf[:k]) == nil {
				n++
				top = max(top, f.Term)
			}
		}
		return n, top
	}
	disk := func() uint64 {
		b, err := os.ReadFile(filepath.Join(state, "core.state"))
		if err != nil {
			t.Fatalf("core.state: %v", err)
		}
		// What the disk covers: the term, or the reservation beside it
		// (bully.Config.Reserve): a claim may leave on it.
		term, reserved, err := bully.RestoreReserved(b)
		if err != nil {
			t.Fatal(err)
		}
		return max(term, reserved)
	}
	// The test plays member 1, with the cluster's key.
	keys, err := app.LoadKeys(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	seq := wire.Seq(1, 0, 0)
	claim := func(term uint64) {
		seq++
		b, err := forge.Frame(wire.Header{Kind: wire.KindCoordinator, Cluster: wire.ServiceClusterID("electd", "synclab"), Sender: 1, Receiver: 2, Term: term, Seq: seq}, wire.Coordinator{}, &keys[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.WriteToUDPAddrPort(b, self); err != nil {
			t.Fatal(err)
		}
	}
	// Member 1 announces the cluster's configuration (configuration
	// agreement), as a member of this build does: electd follows only
	// members whose configuration it knows to agree.
	members, err := app.ParseMembers(c.Members)
	if err != nil {
		t.Fatal(err)
	}
	ann := wire.ConfigAnnounce{Service: "electd", Cluster: "synclab", Algorithm: "bully",
		Params:         []wire.ConfigParam{{Name: "multicast", Value: "none"}, {Name: "priorities", Value: ""}},
		KeyFingerprint: wire.KeyFingerprint(keys[0].Secret), KeyID: keys[0].ID}
	for id, addr := range members {
		ann.Members = append(ann.Members, wire.ConfigMember{ID: id, Addr: addr})
	}
	ann.Canonical()
	announce := func() {
		seq++
		b, err := forge.Frame(wire.Header{Kind: wire.KindConfig, Cluster: wire.ServiceClusterID("electd", "synclab"), Sender: 1, Receiver: 2, Seq: seq}, &ann, &keys[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.WriteToUDPAddrPort(b, self); err != nil {
			t.Fatal(err)
		}
	}
	c.Eventually("electd leads and heartbeats", 10*time.Second, func() bool {
		announce()
		n, top := frames(200 * time.Millisecond)
		return n > 0 && top == bully.MakeTerm(0, 2)
	})
	// Member 1 speaks once while the disk works (a claim of a term electd
	// already outranks): electd saves member 1's epoch before it accepts
	// its first frame, and with a broken disk it could not (a frame of an
	// epoch it cannot save is refused as "unsaved").
	claim(bully.MakeTerm(0, 1))
	frames(300 * time.Millisecond)

	for _, how := range []string{"full", "read-only"} {
		before := disk()
		filler := filepath.Join(mnt, "filler")
		switch how {
		case "full":
			// Fill the rest: every write of the state (temp file, sync,
			// rename) now fails with ENOSPC.
			f, err := os.Create(filler)
			if err != nil {
				t.Fatal(err)
			}
			for err == nil {
				_, err = f.Write(make([]byte, 4096))
			}
			f.Close()
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the tmpfs: %v", err)
			}
		case "read-only":
			// The daemon holds its lock file open for writing, so the
			// tmpfs itself cannot go read-only; a read-only bind mount of
			// the state directory over itself makes every new write there
			// fail with EROFS, as a disk the kernel remounted read-only.
			for _, args := range [][]string{{"--bind", state, state}, {"-o", "remount,bind,ro", state}} {
				if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
					t.Fatalf("mount %v: %v: %s", args, err, out)
				}
			}
		}
		// Member 1 claims a newer term, above electd's reservation (a
		// term it covers would be followed and bullied without a write);
		// electd outranks it and must take the cluster back in a term of
		// its own above it.
		theirs := bully.MakeTerm(bully.TermRound(before)+1, 1)
		claim(theirs)
		n, top := frames(1500 * time.Millisecond)
		st, _ := c.Status(2)
		errs, _ := st["errors"].(map[string]any)
		t.Logf("%s disk: %d frames sent in 1.5 s, highest term %#x, %#x on disk; errors %v", how, n, top, disk(), errs)
		if top > disk() {
			t.Fatalf("%s disk: a frame of term %#x left with %#x on disk", how, top, disk())
		}
		if errs["persist_failed"] == nil || errs["sends_withheld"] == nil {
			t.Errorf("%s disk: the failed writes and the withheld frames are not counted: %v", how, errs)
		}
		// The disk works again: the pending claim is written, then sent.
		switch how {
		case "full":
			os.Remove(filler)
		case "read-only":
			if out, err := exec.Command("umount", state).CombinedOutput(); err != nil {
				t.Fatalf("umount the read-only bind: %v: %s", err, out)
			}
		}
		var got uint64
		c.Eventually(fmt.Sprintf("after the %s disk is repaired, electd announces a term above %#x", how, theirs), 5*time.Second, func() bool {
			_, got = frames(200 * time.Millisecond)
			return got > theirs
		})
		if d := disk(); d < got || bully.TermOwner(got) != 2 {
			t.Fatalf("%s disk repaired: announces %#x, %#x on disk", how, got, d)
		}
	}
}
