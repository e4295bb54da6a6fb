package app

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
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
