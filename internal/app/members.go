package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/pkg/wire"
)

// ParseMembers parses "1=HOST:PORT,2=HOST:PORT,...". Entries may also be
// separated by whitespace or newlines (handy in environment files). HOST is
// an IP address or a name resolved once, at start.
func ParseMembers(s string) (map[uint32]netip.AddrPort, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
	if len(fields) == 0 {
		return nil, fmt.Errorf("empty member list: want ID=HOST:PORT,ID=HOST:PORT,...")
	}
	members := make(map[uint32]netip.AddrPort, len(fields))
	// Two members at one address would be one socket: frames for either
	// reach whichever listens there (a member listed twice, or a copied
	// line whose port was not changed).
	owner := make(map[netip.AddrPort]uint32, len(fields))
	for _, f := range fields {
		idStr, hostport, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("member %q: want ID=HOST:PORT", f)
		}
		id, err := strconv.ParseUint(idStr, 10, 32)
		if err != nil || id == 0 {
			return nil, fmt.Errorf("member %q: ID must be an integer from 1 to %d", f, uint32(1<<32-1))
		}
		if _, dup := members[uint32(id)]; dup {
			return nil, fmt.Errorf("member ID %d appears twice", id)
		}
		ap, err := resolveAddrPort(hostport)
		if err != nil {
			return nil, fmt.Errorf("member %d: %w", id, err)
		}
		if err := memberAddr(ap, len(fields) == 1); err != nil {
			return nil, fmt.Errorf("member %d: %w", id, err)
		}
		if other, dup := owner[ap]; dup {
			return nil, fmt.Errorf("members %d and %d both have the address %s: each member needs its own (another host, or another port)", min(other, uint32(id)), max(other, uint32(id)), ap)
		}
		owner[ap] = uint32(id)
		members[uint32(id)] = ap
	}
	return members, nil
}

// memberAddr refuses an address the other members cannot send to: every
// member sends to every entry of the same list, so an entry is the
// member's own unicast address, not what its socket binds to (0.0.0.0
// would send each member's frames to itself). A member alone is no
// exception: nobody sends to it, so every address would only open its
// port to the LAN for nothing (without a key, to forged frames), and the
// line would have to change when a second member joins.
func memberAddr(ap netip.AddrPort, alone bool) error {
	a := ap.Addr()
	switch {
	case a.IsUnspecified() && alone:
		return fmt.Errorf("address %s: %s means \"every address of this host\": a member alone receives from nobody, so that would only open its port on every network; give 127.0.0.1 for a lab on this host alone, or the host's own address (the one other members will reach it at)", ap, a)
	case a.IsUnspecified():
		return fmt.Errorf("address %s: %s means \"every address of this host\", which no other member can send to: give the host's own address (the one the other members reach it at)", ap, a)
	case a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("address %s: %s is not one host's address: give the member's own unicast address (multicast is --multicast)", ap, a)
	}
	return nil
}

func resolveAddrPort(hostport string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(hostport); err == nil {
		if ap.Port() == 0 {
			return netip.AddrPort{}, fmt.Errorf("address %q: port must not be 0", hostport)
		}
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
	}
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		// "::1:7100" is also an IPv6 address of its own; with the port a
		// member needs, the last group is the port the operator meant.
		if i := strings.LastIndex(hostport, ":"); i > 0 && strings.Count(hostport, ":") > 1 && !strings.HasPrefix(hostport, "[") {
			example := "[ADDRESS]:PORT"
			if _, err := netip.ParseAddr(hostport[:i]); err == nil {
				example = "[" + hostport[:i] + "]" + hostport[i:]
			}
			return netip.AddrPort{}, fmt.Errorf("address %q: an IPv6 address goes in brackets before its port: %s", hostport, example)
		}
		return netip.AddrPort{}, fmt.Errorf("address %q: want HOST:PORT", hostport)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return netip.AddrPort{}, fmt.Errorf("address %q: port must be 1-65535", hostport)
	}
	if err := MistypedIP(host); err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: %w", hostport, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := lookupIP4(ctx, host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("cannot resolve %q: %v (use an IP address, or fix name resolution)", host, err)
	}
	for i := range ips {
		ips[i] = ips[i].Unmap()
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	if ips = slices.Compact(ips); len(ips) > 1 {
		// Every member resolves every name on its own host, and the
		// first address is the resolver's choice: round-robin DNS
		// rotates it, and two hosts' files may list it in another
		// order. Members would then send one member's frames to
		// different addresses (and it might bind another).
		list := make([]string, len(ips))
		for i, ip := range ips {
			list[i] = ip.String()
		}
		return netip.AddrPort{}, fmt.Errorf("name %q resolves to %d addresses (%s): which one is taken depends on the resolver's order, which may differ from host to host: give the member's address, or a name with only that one", host, len(ips), strings.Join(list, ", "))
	}
	return netip.AddrPortFrom(ips[0], uint16(port)), nil
}

// lookupIP4 resolves a member's name to its IPv4 addresses (the system's
// resolver; a test's fake, which never asks DNS).
var lookupIP4 = func(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip4", host)
}

// LoadKeys reads a synclab key file (see wire.ParseKeyFile). The file must
// not be readable by others: a shared key that anyone can read
// authenticates nothing.
func LoadKeys(path string) ([]wire.Key, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("key file %s does not exist: copy the cluster's key there from a member (scp -p), or make one with `%s keygen %s` (every synclab daemon makes the same file)", path, progName(), path)
	}
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if fi.Mode().Perm()&0o004 != 0 {
		return nil, fmt.Errorf("key file %s is world-readable: chmod o-rwx %s", path, path)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("key file %s is not readable by this user (a key is root's, mode 0600): run as root, or give --key-file a copy this user owns (mode 0600)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	keys, err := wire.ParseKeyFile(data)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w (make a new one with `%s keygen --force %s`, or copy the cluster's from a member)", path, err, progName(), path)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("key file %s holds no key", path)
	}
	return keys, nil
}

// ParseMulticast parses "GROUP:PORT" (an IPv4 multicast group).
func ParseMulticast(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("--multicast %q: want GROUP:PORT, e.g. 239.77.0.1:7199", s)
	}
	if !ap.Addr().Is4() || !ap.Addr().IsMulticast() {
		return netip.AddrPort{}, fmt.Errorf("--multicast %q: %s is not an IPv4 multicast group (224.0.0.0/4)", s, ap.Addr())
	}
	if ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("--multicast %q: port must not be 0", s)
	}
	return ap, nil
}

// progName is the daemon this process is, for advice that names a
// command; the tests' binaries are not one, and get timed.
func progName() string {
	if n := filepath.Base(os.Args[0]); slices.Contains([]string{"timed", "mutexd", "electd", "orderd"}, n) {
		return n
	}
	return "timed"
}

// MistypedIP refuses a host made of digits and dots that is no IPv4
// address (300.0.0.1, 10.0.0): a typo, not a name to ask DNS for.
func MistypedIP(host string) error {
	if host != "" && strings.Trim(host, "0123456789.") == "" {
		return fmt.Errorf("%q is not an IPv4 address (four numbers 0-255, e.g. 10.0.0.1)", host)
	}
	return nil
}

// checkMetricsAddr refuses a --metrics address the daemon could not
// listen on, at start rather than with the socket's error: a bare port
// ("9177") and a port out of range are the usual slips. An empty host
// listens on every address, as net.Listen does.
func checkMetricsAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if _, perr := strconv.ParseUint(addr, 10, 16); perr == nil {
			return fmt.Errorf("--metrics %q: want HOST:PORT, e.g. 127.0.0.1:%s (a port alone is no address)", addr, addr)
		}
		return fmt.Errorf("--metrics %q: want HOST:PORT, e.g. 127.0.0.1:9177 ([IPv6]:PORT for IPv6)", addr)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("--metrics %q: port %q: want 1-65535", addr, port)
	}
	if _, err := netip.ParseAddr(host); err != nil {
		if err := MistypedIP(host); err != nil {
			return fmt.Errorf("--metrics %q: %w", addr, err)
		}
	}
	return nil
}

// MajorityWarning is the start-up warning for an even member count in a
// cluster whose algorithm (what) works only while a majority runs: an
// even count is legal, but it survives no more failures than one member
// fewer, and two members survive none. "" for an odd count.
func MajorityWarning(members int, what string) string {
	if members < 2 || members%2 == 1 {
		return ""
	}
	majority := members/2 + 1
	if members == 2 {
		return fmt.Sprintf("2 members, and %s needs a majority (2 of 2): the loss of either member stops it; 3 members survive one failure (or run 1 for no fault tolerance)", what)
	}
	return fmt.Sprintf("%d members, and %s needs a majority (%d of %d): it survives %s, as %d members would; an odd count (%d or %d) is the usual choice",
		members, what, majority, members, Plural(uint64(members-majority), "failed member"), members-1, members-1, members+1)
}

// HookTimeout is the --hook-timeout flag's value, refused unless
// positive: a negative one kills every hook as it starts, and 0 would be
// the daemon's default, not "no limit".
func HookTimeout(c *cli.Context) (time.Duration, error) {
	d := c.Duration("hook-timeout")
	if d <= 0 {
		return 0, Usagef("--hook-timeout %v: want a positive duration (a hook still running after it is killed)", d)
	}
	return d, nil
}
