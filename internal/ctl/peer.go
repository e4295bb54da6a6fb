package ctl

import (
	"context"
	"fmt"
	"net/http"
	"os/user"
	"slices"
	"strconv"
)

// Peer is the process at the other end of a control connection, as the
// kernel reported it when the connection was made (SO_PEERCRED,
// SO_PEERGROUPS). It cannot be forged by the client.
type Peer struct {
	PID    int32
	UID    uint32
	GID    uint32   // primary group
	Groups []uint32 // supplementary groups; nil where the kernel cannot say
}

type peerKey struct{}

// PeerOf returns the credentials of the process that sent r. Handlers use
// it to record who holds a lock (the PID) or to log who asked.
func PeerOf(r *http.Request) (Peer, bool) {
	p, ok := r.Context().Value(peerKey{}).(Peer)
	return p, ok
}

func withPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// policy is who may use the socket: root, the daemon's own user, and, when
// a group is configured, the members of that group.
type policy struct {
	self  uint32 // the daemon's uid
	gid   uint32
	group string // name, for messages; empty: no group configured
}

// allowed decides whether a peer may use the control API. The group test
// accepts the peer's primary group as well as its supplementary groups, as
// the kernel does when it checks the socket file's group permission.
func (pol policy) allowed(p Peer) bool {
	if p.UID == 0 || p.UID == pol.self {
		return true
	}
	if pol.group == "" {
		return false
	}
	return p.GID == pol.gid || slices.Contains(p.Groups, pol.gid)
}

func (pol policy) refusal(p Peer) string {
	who := "root and uid " + strconv.FormatUint(uint64(pol.self), 10)
	if pol.group != "" {
		who += fmt.Sprintf(" and members of group %s (gid %d)", pol.group, pol.gid)
	}
	return fmt.Sprintf("uid %d (pid %d) may not use this control socket: only %s may", p.UID, p.PID, who)
}

// LookupGroup resolves a group name, or a numeric gid, to its gid.
func LookupGroup(name string) (uint32, error) {
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return uint32(n), nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("group %s has a non-numeric gid %q", name, g.Gid)
	}
	return uint32(n), nil
}
