package transport

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/synclab/synclab/internal/testkit/testenv"
)

// checkOwnStamps writes three stamped datagrams to to and fails unless
// each comes back with a kernel stamp taken during the write, in order.
func checkOwnStamps(t *testing.T, tx *UDPConn, to netip.AddrPort, what string) {
	t.Helper()
	ds := []Datagram{{To: to, Data: []byte("a"), Stamp: true}, {To: to, Data: []byte("b"), Stamp: true}, {To: to, Data: []byte("c"), Stamp: true}}
	stamps := make([]TxStamp, len(ds))
	before := time.Now()
	if n, err := tx.WriteBatchStamped(ds, stamps); n != len(ds) || err != nil {
		t.Fatalf("%s: %d written, %v", what, n, err)
	}
	after := time.Now()
	var last time.Time
	for i, st := range stamps {
		if !st.Kernel || st.Missed || st.Time.Before(before) || st.Time.After(after) || st.Time.Before(last) {
			t.Errorf("%s: datagram %d: %+v, want its own stamp in [%v, %v]", what, i, st, before, after)
		}
		last = st.Time
	}
	if st, err := tx.SendStamped(to, []byte("d"), nil); err != nil || !st.Kernel || st.Time.Before(after) {
		t.Errorf("%s: stamped send: %+v, %v; want its own stamp", what, st, err)
	}
}

// TestTxStampCounterAhead: a stamped datagram the socket did not count
// (standing for any failure no write reported) puts the kernel's counter
// ahead of txSent. The batch that finds it out hands out no stamp (each
// would be its predecessor's), and the counter is reset: the next batch
// and send get their own stamps again. Before, every later batch gave
// each datagram the stamp of the one before, and the client's send
// missed its stamp, for good.
func TestTxStampCounterAhead(t *testing.T) {
	rx, tx := udpPair(t)
	to := rx.LocalAddr()
	sa := &unix.SockaddrInet4{Port: int(to.Port()), Addr: to.Addr().As4()}
	var serr error
	if err := tx.sock.rc.Control(func(fd uintptr) {
		_, serr = unix.SendmsgN(int(fd), []byte("uncounted"), txStampOOB, sa, 0)
	}); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	before := time.Now()
	ds := []Datagram{{To: to, Data: []byte("a"), Stamp: true}, {To: to, Data: []byte("b"), Stamp: true}}
	stamps := make([]TxStamp, len(ds))
	if n, err := tx.WriteBatchStamped(ds, stamps); n != len(ds) || err != nil {
		t.Fatalf("%d written, %v", n, err)
	}
	for i, st := range stamps {
		if st.Kernel && st.Time.Before(before) {
			t.Errorf("datagram %d got the uncounted datagram's stamp (%v, before its write at %v)", i, st.Time, before)
		}
	}
	checkOwnStamps(t, tx, to, "after the counter ran ahead")
	checkOwnStamps(t, tx, to, "again")
}

// TestTxStampCounterAfterRefusedSend: in a network namespace of its own,
// an nftables output rule drops what goes to 127.0.0.2, so that sendmsg
// fails with EPERM after the kernel gave the datagram its stamp counter
// value (and sendmmsg, stopping at it, tries it twice). Reproduces review
// finding 1: [good, refused, good] left txSent at 2 and the kernel at 4,
// and from then on each answer got another's stamp. Needs root, ip and
// nft; skipped without them.
func TestTxStampCounterAfterRefusedSend(t *testing.T) {
	testenv.RequireRoot(t, "a network namespace with an nftables rule")
	testenv.RequireTool(t, "iproute2", "ip")
	testenv.RequireTool(t, "nftables", "nft")
	ns := fmt.Sprintf("xlstamp%d", os.Getpid())
	run := func(stdin string, args ...string) error {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("", "ip", "netns", "add", ns); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	t.Cleanup(func() { run("", "ip", "netns", "del", ns) })
	if err := run("", "ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}
	rules := "table inet xlstamp {\n chain out {\n  type filter hook output priority 0;\n  ip daddr 127.0.0.2 drop\n }\n}\n"
	if err := run(rules, "ip", "netns", "exec", ns, "nft", "-f", "-"); err != nil {
		t.Fatal(err)
	}

	// The sockets are opened on a thread in the namespace; they stay
	// there. The thread is discarded (no UnlockOSThread).
	errc := make(chan error, 1)
	var rx, tx *UDPConn
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		for _, c := range []**UDPConn{&rx, &tx} {
			u, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"))
			if err != nil {
				errc <- err
				return
			}
			*c = u
		}
		errc <- nil
	}()
	err := <-errc
	for _, u := range []*UDPConn{rx, tx} {
		if u != nil {
			t.Cleanup(func() { u.Close() })
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	to := rx.LocalAddr()
	blocked := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), to.Port())

	before := time.Now()
	ds := []Datagram{{To: to, Data: []byte("good"), Stamp: true}, {To: blocked, Data: []byte("refused"), Stamp: true}, {To: to, Data: []byte("good"), Stamp: true}}
	stamps := make([]TxStamp, len(ds))
	n, err := tx.WriteBatchStamped(ds, stamps)
	after := time.Now()
	if n != 2 || !errors.Is(err, unix.EPERM) {
		t.Fatalf("[good, refused, good]: %d written, %v; want 2 and EPERM", n, err)
	}
	if st := stamps[0]; !st.Kernel || st.Time.Before(before) || st.Time.After(after) {
		t.Errorf("the datagram before the refused one: %+v, want its stamp", st)
	}
	if st := stamps[1]; st.Kernel {
		t.Errorf("the refused datagram has a stamp: %+v", st)
	}
	if st := stamps[2]; st.Kernel && !st.Time.After(stamps[0].Time) {
		t.Errorf("the datagram after the refused one has an earlier stamp: %+v", st)
	}
	checkOwnStamps(t, tx, to, "after a refused datagram")

	if _, err := tx.SendStamped(blocked, []byte("refused"), nil); !errors.Is(err, unix.EPERM) {
		t.Fatalf("stamped send to the blocked address: %v, want EPERM", err)
	}
	checkOwnStamps(t, tx, to, "after a refused stamped send")
}
