package forge

import (
	"encoding"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// Frame encodes a synclab frame with exactly the header h (sequence, term
// and Lamport time as given: nothing is checked for plausibility, which is
// the point), the payload p (nil: empty), the transmit timestamp of now,
// and, if key is not nil, a valid authentication trailer.
func Frame(h wire.Header, p encoding.BinaryAppender, key *wire.Key) ([]byte, error) {
	var payload []byte
	if p != nil {
		var err error
		if payload, err = p.AppendBinary(nil); err != nil {
			return nil, fmt.Errorf("forge: payload: %w", err)
		}
	}
	return Raw(h, payload, key)
}

// Raw is Frame with the payload's bytes as given (they may be malformed).
func Raw(h wire.Header, payload []byte, key *wire.Key) ([]byte, error) {
	f := wire.Frame{Header: h, Payload: payload}
	b, err := f.AppendBinary(nil)
	if err != nil {
		return nil, fmt.Errorf("forge: frame: %w", err)
	}
	wire.PatchXmt(b, wire.NTPTimeFromTime(time.Now()))
	if key != nil {
		b = wire.Seal(b, *key)
	}
	return b, nil
}

// SendUDP sends b in one datagram to to, from the local address from (the
// zero AddrPort: any address and port the kernel picks; a port of 0: any
// port on that address).
func SendUDP(from, to netip.AddrPort, b []byte) error {
	var laddr *net.UDPAddr
	if from.IsValid() {
		laddr = net.UDPAddrFromAddrPort(from)
	}
	c, err := net.DialUDP("udp", laddr, net.UDPAddrFromAddrPort(to))
	if err != nil {
		return fmt.Errorf("forge: %w", err)
	}
	defer c.Close()
	if _, err := c.Write(b); err != nil {
		return fmt.Errorf("forge: send to %s: %w", to, err)
	}
	return nil
}

// SendSpoofedUDP sends b in one IPv4 UDP datagram to to with the source
// address src, whatever addresses this host has: what a student with root
// on a lab machine can do. It needs CAP_NET_RAW. The UDP checksum is
// computed, so the receiver's kernel delivers the datagram like any other.
func SendSpoofedUDP(src, to netip.AddrPort, b []byte) error {
	if !src.Addr().Is4() || !to.Addr().Is4() {
		return fmt.Errorf("forge: spoofing is IPv4 only (%s -> %s)", src, to)
	}
	if len(b) > 65535-8-20 {
		return fmt.Errorf("forge: %d bytes do not fit one IPv4 datagram", len(b))
	}
	c, err := net.ListenPacket("ip4:udp", "0.0.0.0")
	if err != nil {
		return fmt.Errorf("forge: raw socket (needs CAP_NET_RAW): %w", err)
	}
	defer c.Close()
	// The kernel writes the IP header (IPPROTO_UDP raw socket without
	// IP_HDRINCL) from the socket's bound address; binding to an address
	// this host does not have is refused, so the header is ours to write.
	rc, ok := c.(*net.IPConn)
	if !ok {
		return fmt.Errorf("forge: raw socket is %T", c)
	}
	raw, err := rc.SyscallConn()
	if err != nil {
		return fmt.Errorf("forge: %w", err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = setHdrIncl(fd) }); err != nil {
		return fmt.Errorf("forge: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("forge: IP_HDRINCL: %w", serr)
	}
	pkt := ipv4UDP(src, to, b)
	if _, err := rc.WriteToIP(pkt, &net.IPAddr{IP: to.Addr().AsSlice()}); err != nil {
		return fmt.Errorf("forge: spoofed send to %s: %w", to, err)
	}
	return nil
}

// ipv4UDP builds an IPv4 header, a UDP header with its checksum, and b.
func ipv4UDP(src, dst netip.AddrPort, b []byte) []byte {
	const ipLen, udpLen = 20, 8
	total := ipLen + udpLen + len(b)
	p := make([]byte, total)
	p[0] = 0x45 // version 4, 5 words
	binary.BigEndian.PutUint16(p[2:], uint16(total))
	p[6] = 0x40 // don't fragment
	p[8] = 64   // TTL
	p[9] = 17   // UDP
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	copy(p[12:16], s4[:])
	copy(p[16:20], d4[:])
	binary.BigEndian.PutUint16(p[10:], checksum(0, p[:ipLen]))

	u := p[ipLen:]
	binary.BigEndian.PutUint16(u[0:], src.Port())
	binary.BigEndian.PutUint16(u[2:], dst.Port())
	binary.BigEndian.PutUint16(u[4:], uint16(udpLen+len(b)))
	copy(u[udpLen:], b)
	// Pseudo-header: source, destination, zero, protocol, UDP length.
	var sum uint32
	sum = sumWords(sum, s4[:])
	sum = sumWords(sum, d4[:])
	sum += 17 + uint32(udpLen+len(b))
	c := checksum(sum, u)
	if c == 0 {
		c = 0xffff // RFC 768: a computed zero is sent as all ones
	}
	binary.BigEndian.PutUint16(u[6:], c)
	return p
}

func sumWords(sum uint32, b []byte) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	return sum
}

// checksum is the Internet checksum of b added to a partial sum.
func checksum(sum uint32, b []byte) uint16 {
	sum = sumWords(sum, b)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
