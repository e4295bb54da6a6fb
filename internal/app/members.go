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
		members[uint32(id)] = ap
	}
	return members, nil
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
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("cannot resolve %q: %v (use an IP address, or fix name resolution)", host, err)
	}
	return netip.AddrPortFrom(ips[0].Unmap(), uint16(port)), nil
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
