package node

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
)

// hintRecorder is a recorder that acts on hints.
type hintRecorder struct {
	recorder
	hints []core.Hint
}

func (r *hintRecorder) Hint(h core.Hint) { r.hints = append(r.hints, h) }

// TestHint: a transport's hint about a member's address reaches a core
// that acts on hints as that member's, is counted by cause and shown per
// member in status; one about any other address (this node's own, a
// stranger's) is refused and counted, the core not told. A core that
// does not act on hints is not asked to.
func TestHint(t *testing.T) {
	r := &hintRecorder{}
	n, err := New(Config{ID: 1, Members: members, Cluster: "lab", Incarnation: 1}, r)
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Second)
	if id, err := n.Hint(netip.MustParseAddrPort("[::ffff:127.0.0.12]:7000"), core.HintStreamClosed, at); err != nil || id != 2 {
		t.Fatalf("hint about 2's address: member %d, %v", id, err)
	}
	if _, err := n.Hint(members[2], core.HintDialRefused, at.Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	for _, a := range []netip.AddrPort{members[1], netip.MustParseAddrPort("127.0.0.12:7001"), netip.MustParseAddrPort("10.0.0.1:7000")} {
		if _, err := n.Hint(a, core.HintStreamClosed, at); !errors.Is(err, ErrHintNotMember) {
			t.Errorf("hint about %v: %v, want ErrHintNotMember", a, err)
		}
	}
	want := []core.Hint{{Member: 2, Cause: core.HintStreamClosed, Time: at}, {Member: 2, Cause: core.HintDialRefused, Time: at.Add(time.Millisecond)}}
	if len(r.hints) != 2 || r.hints[0] != want[0] || r.hints[1] != want[1] {
		t.Fatalf("core got %+v, want %+v", r.hints, want)
	}
	st := n.Status()
	if st.Hints["stream_closed"] != 1 || st.Hints["dial_refused"] != 1 || st.Dropped["hint_not_member"] != 3 {
		t.Fatalf("counts %v, dropped %v", st.Hints, st.Dropped)
	}
	var p2 *PeerSeq
	for i := range st.Peers {
		if st.Peers[i].ID == 2 {
			p2 = &st.Peers[i]
		}
	}
	if p2 == nil || p2.Hints != 2 || p2.HintCause != "dial_refused" || !p2.HintAt.Equal(at.Add(time.Millisecond)) {
		t.Fatalf("member 2 in status: %+v", p2)
	}

	plain, _ := newNode(t, 1, nil)
	if id, err := plain.Hint(members[3], core.HintPortUnreachable, at); err != nil || id != 3 {
		t.Fatalf("a core without hints: member %d, %v", id, err)
	}
}
