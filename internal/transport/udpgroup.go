package transport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
)

// GroupOptions let a UDPConn send to a broadcast address or a multicast
// group, and hear a group: what timed's NTP socket needs for broadcast
// mode (timed run --broadcast, --broadcast-client).
type GroupOptions struct {
	// Broadcast allows sends to a broadcast address (SO_BROADCAST).
	Broadcast bool
	// Interface is the interface multicast is sent from and Join is
	// joined on (IP_MULTICAST_IF; namespaces have no default route, so
	// without it a send fails "network is unreachable"). Required for a
	// multicast send or Join.
	Interface string
	// TTL of multicast sends (IP_MULTICAST_TTL; 1: this LAN only).
	TTL int
	// Join is a multicast group to hear (the zero Addr: none).
	Join netip.Addr
}

// ConfigureGroups applies o to the socket; call it before any traffic.
func (u *UDPConn) ConfigureGroups(o GroupOptions) error {
	rc, err := u.sock.conn.SyscallConn()
	if err != nil {
		return err
	}
	if o.Broadcast {
		if err := setBroadcast(rc); err != nil {
			return fmt.Errorf("transport: SO_BROADCAST: %w", err)
		}
	}
	if o.Interface == "" {
		if o.Join.IsValid() {
			return errors.New("transport: joining a multicast group needs an interface")
		}
		return nil
	}
	ifi, err := net.InterfaceByName(o.Interface)
	if err != nil {
		return fmt.Errorf("transport: interface %q: %w", o.Interface, err)
	}
	pc := ipv4.NewPacketConn(u.sock.conn)
	if err := pc.SetMulticastInterface(ifi); err != nil {
		return fmt.Errorf("transport: IP_MULTICAST_IF %s: %w", o.Interface, err)
	}
	if err := pc.SetMulticastTTL(max(o.TTL, 1)); err != nil {
		return fmt.Errorf("transport: IP_MULTICAST_TTL %d: %w", o.TTL, err)
	}
	// Our own multicast is of no use to us.
	if err := pc.SetMulticastLoopback(false); err != nil {
		return fmt.Errorf("transport: IP_MULTICAST_LOOP: %w", err)
	}
	if o.Join.IsValid() {
		if !o.Join.Is4() || !o.Join.IsMulticast() {
			return fmt.Errorf("transport: %v is not an IPv4 multicast group", o.Join)
		}
		if err := pc.JoinGroup(ifi, &net.UDPAddr{IP: o.Join.AsSlice()}); err != nil {
			return fmt.Errorf("transport: join %v on %s: %w", o.Join, o.Interface, err)
		}
	}
	return nil
}
