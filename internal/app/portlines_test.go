package app

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
)

// TestPortLinesSayWhatWasSeen: status's Port hint line says a closed link
// as a closed port, and a dial that timed out as no answer (its host may
// be down, cut off or behind a firewall): not a closed port.
func TestPortLinesSayWhatWasSeen(t *testing.T) {
	at := time.Date(2026, 12, 7, 14, 2, 3, 123e6, time.UTC)
	lines := portLines([]node.PeerSeq{
		{ID: 2, Hints: 1, HintCause: "stream_closed", HintAt: at},
		{ID: 3, Hints: 360, HintCause: "dial_timeout", HintAt: at},
	}, time.Time{})
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "member 2: port closed at 14:02:03.123 (stream_closed)") ||
		!strings.HasPrefix(lines[1], "member 3: no answer to connect at 14:02:03.123 (dial_timeout), 360 hints") {
		t.Fatalf("port lines:\n%s", strings.Join(lines, "\n"))
	}
}

// TestSupersedingLinesSayCauseAndRemedy: status's Superseding line names
// the member and its IP, how many within the window and when the last,
// what it cost, the likely causes and what to do.
func TestSupersedingLinesSayCauseAndRemedy(t *testing.T) {
	at := time.Date(2026, 12, 7, 14, 2, 3, 0, time.UTC)
	lines := supersedingLines([]daemon.SupersedingStatus{{
		Member:         2,
		PeerSuperseded: transport.PeerSuperseded{Peer: netip.MustParseAddrPort("127.0.0.12:0"), Connections: 48, Frames: 120, Last: at, Recent: 11, Thrashing: true},
		Cause:          "another process",
		Hint:           "`ss -tnp`",
	}})
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "member 2 (127.0.0.12): its TCP connections here keep being reset for newer ones from its IP, more than 10 within 1m0s, the last at 14:02:03 UTC; 48 connections in all, 120 frames lost. Cause: another process. To do: `ss -tnp`") {
		t.Fatalf("superseding lines:\n%s", strings.Join(lines, "\n"))
	}
}
