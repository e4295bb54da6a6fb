package daemon

import (
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"time"

	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/wire"
)

// A member's TCP connection here is superseded when a newer one from its
// IP delivers a frame (the transport keeps a member's frames in order
// across its reconnects, internal/transport). Now and then that is a
// member that restarted or whose write timed out, and nothing is said
// (status counts them: Superseded). A steady stream of them
// (transport.PeerSuperseded.Thrashing: more than SupersedeThrash within
// SupersedeWindow) is another process dialling this port from the
// member's IP in its name, the two resetting each other's connections at their
// frames: the member loses frames silently. (A process whose frames the
// node would refuse, of another cluster, in another member's name or
// without the key, supersedes nothing: memberFrame.) That is said at WARN, once
// per supersedeWarnEvery per member, and in status (Superseding) while
// it lasts.

// supersedeWarnEvery spaces the WARN lines about one member's thrashing
// connections.
const supersedeWarnEvery = time.Minute

// supersedeCheckEvery is how often the loop's tick polls the transport
// for them.
const supersedeCheckEvery = time.Second

// supersedeCause and supersedeHint are what the WARN and status say.
const (
	supersedeCause = "another process dials this node's port from the member's IP with frames this node takes for the member's " +
		"(this cluster's, in the member's name, with the key), and each one's frame resets the other's connection: " +
		"a second daemon of that member started by hand on its host, or a copy of its configuration on a host behind the same IP; " +
		"a replay of the member's recorded frames by someone on the path (with a key, the node counts them refused as replay or stale in status); " +
		"without a key, anyone who sends frames in its name (status counts their refusals dropped); " +
		"or the member itself redialling again and again, its writes here timing out (this node's loop stalled, or loss on the path)"
	supersedeHint = "find the other process: `ss -tnp` on the member's host lists the connections to this node's port and who holds them; " +
		"check --members (every member's list alike) and the port"
)

// SupersedingStatus is one member whose connections here are being
// superseded again and again now (Status.Superseding).
type SupersedingStatus struct {
	Member uint32 `json:"member"` // 0: no member has that address alone
	transport.PeerSuperseded
	Cause string `json:"cause"`
	Hint  string `json:"hint"`
}

// checkSuperseded says at WARN, per member and at most once per
// supersedeWarnEvery, that its connections here thrash. On the loop, from
// tick.
func (d *Daemon) checkSuperseded(wall time.Time) {
	if d.ep == nil || (!d.supersedeChecked.IsZero() && wall.Sub(d.supersedeChecked) < supersedeCheckEvery && !wall.Before(d.supersedeChecked)) {
		return
	}
	d.supersedeChecked = wall
	for _, p := range d.ep.Superseding() {
		if !p.Thrashing || p.Connections == d.supersedeSeen[p.Peer] {
			continue
		}
		if d.supersedeSeen == nil {
			d.supersedeSeen = map[netip.AddrPort]uint64{}
		}
		d.supersedeSeen[p.Peer] = p.Connections
		member := d.memberAt(p.Peer)
		who := fmt.Sprintf("member %d (%v)", member, p.Peer.Addr())
		if member == 0 {
			who = fmt.Sprintf("%v (members share it)", p.Peer.Addr()) // as status says it
		}
		d.alerts.report(wall, slog.LevelWarn, "superseded", member, supersedeWarnEvery,
			fmt.Sprintf("%s: its TCP connections here keep being reset for newer ones from its IP, more than %d within %v; %d in all, %d %s lost",
				who, transport.SupersedeThrash, transport.SupersedeWindow, p.Connections, p.Frames, frames(p.Frames)),
			"peer", p.Peer.Addr().String(), "connections", p.Connections, "frames_lost", p.Frames,
			"cause", supersedeCause, "hint", supersedeHint)
	}
}

// supersedingStatus is what status says of the members whose connections
// thrash now.
func (d *Daemon) supersedingStatus(ps []transport.PeerSuperseded) []SupersedingStatus {
	var out []SupersedingStatus
	for _, p := range ps {
		if p.Thrashing {
			out = append(out, SupersedingStatus{Member: d.memberAt(p.Peer), PeerSuperseded: p, Cause: supersedeCause, Hint: supersedeHint})
		}
	}
	return out
}

// memberAt is the member a transport's sender key names: the one member
// on its IP (port 0), or the member at that address. 0: none.
func (d *Daemon) memberAt(key netip.AddrPort) uint32 {
	var found uint32
	for id, a := range d.cfg.Members {
		switch {
		case id == d.cfg.ID:
			// The transport's peers leave this node out: an IP it shares
			// with one other member is that member's alone there
			// (review-supersede: "member 0 (127.0.0.1)" on a two-member
			// loopback cluster).
		case key.Port() != 0 && a == key:
			return id
		case key.Port() == 0 && a.Addr().Unmap() == key.Addr():
			if found != 0 {
				return 0
			}
			found = id
		}
	}
	return found
}

// memberFrame is the transport's Config.Supersedes: whether a stream
// frame from `from` passes what the node checks of a member's frame
// before its replay window (it decodes, is of this cluster, names as its
// sender the member whose IP it came from, is addressed to this member or
// to all, and carries a MAC by one of the keys, when there are keys). A
// connection whose frames fail it (another cluster's member on this
// port, a forger without the key) then never supersedes the member's, and
// the node counts its frames dropped (more than
// transport.DefaultPerPeerConns such connections from the member's IP
// still evict the member's: the slots' rule, inbound_evicted, as before).
// A frame that passes and is still refused (a replay of a member's
// recorded frame) supersedes all the same. Its own validator: it runs on
// the transport's readers, not the loop.
func (d *Daemon) memberFrame() func(netip.AddrPort, []byte) bool {
	v := wire.NewValidator(wire.ServiceClusterID(d.cfg.Name, d.cfg.Cluster), d.cfg.ID, d.cfg.Keys)
	members := maps.Clone(d.cfg.Members)
	return func(from netip.AddrPort, b []byte) bool {
		var f wire.Frame
		if f.UnmarshalBinary(b) != nil {
			return false
		}
		a, ok := members[f.Sender]
		if !ok || a.Addr().Unmap() != from.Addr().Unmap() {
			return false
		}
		return v.Admit(&f, b) == nil
	}
}

func frames(n uint64) string {
	if n == 1 {
		return "frame"
	}
	return "frames"
}
