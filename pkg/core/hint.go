package core

import (
	"fmt"
	"time"
)

// HintCause says what the transport saw of a member's port.
type HintCause uint8

// Causes of a hint. Append only: the names appear in status and metrics.
const (
	// HintStreamClosed: the member closed or reset this node's TCP link
	// to it (the kernel sends a FIN or an RST for a process that dies,
	// SIGKILL included).
	HintStreamClosed HintCause = iota + 1
	// HintDialRefused: a connection to the member's port was refused
	// (nothing listens there).
	HintDialRefused
	// HintPortUnreachable: an ICMP port unreachable came back for a
	// datagram to the member's address. Reserved: no transport reads
	// ICMP errors yet (IP_RECVERR would share the error queue with the
	// transmit stamps timed needs).
	HintPortUnreachable
	// HintHostUnreachable: an ICMP host (or network) unreachable came
	// back for a datagram to the member's address. Reserved, as above.
	HintHostUnreachable
	// HintDialTimeout: a connection to the member's port was not
	// answered within the dial timeout (a firewall that drops connection
	// attempts silently, a host that is down or cut off).
	HintDialTimeout
)

// HintCauses lists every cause, in order (metrics show each, at 0).
var HintCauses = []HintCause{HintStreamClosed, HintDialRefused, HintPortUnreachable, HintHostUnreachable, HintDialTimeout}

func (c HintCause) String() string {
	switch c {
	case HintStreamClosed:
		return "stream_closed"
	case HintDialRefused:
		return "dial_refused"
	case HintPortUnreachable:
		return "port_unreachable"
	case HintHostUnreachable:
		return "host_unreachable"
	case HintDialTimeout:
		return "dial_timeout"
	}
	return fmt.Sprintf("hint(%d)", uint8(c))
}

// Seen says in words what the transport saw, for log and status lines
// ("member 3: port closed"): a dial that timed out is no answer, not a
// closed port (the host may be down, cut off, or behind a firewall that
// drops connection attempts), and an unreachable host is not a port.
func (c HintCause) Seen() string {
	switch c {
	case HintDialTimeout:
		return "no answer to connect"
	case HintHostUnreachable:
		return "host unreachable"
	}
	return "port closed"
}

// Hint says that a member's port looked closed: the transport saw its
// link close, a connection to it refused, or an ICMP error for a datagram
// to it. It is a hint, never evidence: anyone on the LAN can forge a TCP
// reset or an ICMP error, key or no key, and a live member's link closes
// for reasons of its own (an idle timeout, a restart of its connection).
// A core may act sooner on it (probe the member at once with its own,
// authenticated frames and conclude from their silence), never conclude
// from it alone.
type Hint struct {
	Member uint32    // the member the hint is about
	Cause  HintCause // what was seen
	Time   time.Time // local clock when the transport saw it
}

// Hinter is implemented by a core that acts on hints. The driver calls
// Hint on its goroutine, as it does Step, and drains Ready after.
type Hinter interface {
	Hint(h Hint)
}
