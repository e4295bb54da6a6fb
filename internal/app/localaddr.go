package app

import (
	"fmt"
	"net"
	"net/netip"
)

// LocalAddrs returns this machine's interface addresses, each with the
// name of its interface. A variable so that tests can give a machine any
// addresses.
var LocalAddrs = func() (map[netip.Addr]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("listing this machine's network interfaces: %w", err)
	}
	out := map[netip.Addr]string{}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, fmt.Errorf("listing the addresses of %s: %w", ifc.Name, err)
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				out[p.Addr().Unmap()] = ifc.Name
			}
		}
	}
	return out, nil
}

// LocalAddr says whether a is one of this machine's addresses, and where:
// an interface's, or any of the loopback network's (Linux answers every
// 127.x on lo). local is what LocalAddrs returned.
func LocalAddr(local map[netip.Addr]string, a netip.Addr) (where string, ok bool) {
	a = a.Unmap()
	if ifc, ok := local[a]; ok {
		return ifc, true
	}
	if a.IsLoopback() {
		return "loopback", true
	}
	return "", false
}
