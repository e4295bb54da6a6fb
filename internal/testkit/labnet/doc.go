// Package labnet builds emulated LANs out of Linux network namespaces for the
// lab tests of the synclab daemons: real binaries, real sockets, real kernel
// timestamps, on hosts that can be partitioned, made lossy, delayed and
// killed, without touching the machine's own network.
//
// # Layout
//
// New(t, n) creates n+1 namespaces named after a prefix unique to the run
// ("sl" and 6 hex digits, so concurrent runs never collide):
//
//	 <prefix>-h1              <prefix>-h2                  <prefix>-hN
//	+-------------------+    +-------------------+        +-------------------+
//	| lo 127.0.0.1      |    | lo 127.0.0.1      |        | lo 127.0.0.1      |
//	| eth0 10.77.0.1/24 |    | eth0 10.77.0.2/24 |  ...   | eth0 10.77.0.N/24 |
//	+---------+---------+    +---------+---------+        +---------+---------+
//	          | veth                   | veth                         | veth
//	+---------+------------------------+------------------------------+---------+
//	|         p1                       p2                             pN        |
//	|   br0 (kernel bridge, multicast snooping off) + nftables "bridge synclab" |
//	|   or, WithSwitch: the user-space switch of package l2switch               |
//	|                             <prefix>-br                                   |
//	+---------------------------------------------------------------------------+
//
// Every host has lo up, IPv6 disabled on eth0 (no router or neighbour
// solicitations, no MLD), IGMPv2 forced (IGMPv3 report bursts otherwise
// clutter captures), and a route 224.0.0.0/4 dev eth0, since namespaces have
// no default route and a multicast send would fail "network is
// unreachable". The root namespace is never modified. The `ip` commands are
// batched, one `ip -batch` per namespace, so eight hosts come up in about
// 50 ms and go away in about as long.
//
// Every lab is torn down by the t.Cleanup that New registers, whether the test
// passed or failed: the processes in its namespaces are killed by PID (found
// by their namespace, so children of lab processes go too), then the
// namespaces are deleted, which takes the veths, the bridge and the nftables
// table with them. Lab processes also get SIGKILL from the kernel if the test
// binary dies without running its cleanups (a `go test -timeout` panic); the
// namespaces of such a run are listed by `scripts/lab.sh status` and removed by
// `scripts/lab.sh down --prefix P`, since every lab records itself in
// /run/synclab-lab-<prefix>/state in the format lab.sh uses.
//
// # Use
//
// Lab tests are named TestLab* and call Require first, which skips with the
// reason unless the test runs as root on Linux with `ip` and `nft` installed
// and namespaces can be created (with CI=true, which .ci/run exports, any of
// these missing is a failure: CI must run the lab tests):
//
//	func TestLabFailover(t *testing.T) {
//		labnet.Require(t)
//		lab := labnet.New(t, 3)
//		for _, h := range lab.Hosts() {
//			h.Start(t, "electd", []string{bin, "run", "--id", strconv.Itoa(h.Index()), ...}, nil)
//		}
//		...
//		lab.Partition(1, 2)      // silent drop between h1 and h2, both ways
//		lab.Split([]int{1}, []int{2, 3})
//		lab.HealAll()
//		lab.Loss(3, 20)          // 20% of UDP to and from h3
//		p.Kill()                 // SIGKILL the daemon itself, reaped on return
//	}
//
// Host.Start runs a program inside a host's namespace through `ip netns exec`,
// which execs the program in place, so Proc.PID is the program's own and
// Kill, Stop (SIGSTOP) and Cont act on it directly. Its stdout and stderr go
// to a file in Lab.Dir, printed in the test log if the test fails. Host.Run
// runs a command to completion (`ip`, `nft`, a CLI against a daemon's control
// socket). Host.Do runs a Go function on a thread inside the namespace: the
// cheap way for the test itself to own a socket on a host.
//
// Tests that need a program of their own in a namespace use the helper
// process pattern: start os.Args[0] with -test.run=^TestLabHelperProcess$ and
// an environment variable naming the role (see transport_lab_test.go).
//
// # Impairments
//
// On the default bridged lab, impairments are nftables rules on the bridge's
// forward path, matched on the ports p<i>: a partition is a pair of entries
// in a set of (in, out) port pairs, loss is "numgen random mod 100 < P drop".
// They never act on a host's own output, where a drop makes send fail with
// EPERM instead of losing the packet. Loss and LossIP draw each direction
// independently and spare ARP; Loss spares TCP as well. DropUDPByte drops
// every UDP packet to or from a host whose payload has a given byte at a
// given offset (one kind of message, the others spared).
//
// Delay, jitter, asymmetric links and duplication need WithSwitch: the
// kernel of the lab machines has no netem qdisc. With it the switch-side veth
// ends are not bridged; package l2switch reads them with AF_PACKET sockets
// (opened in the bridge namespace, served by goroutines of the test binary)
// and forwards each frame per directed link (SetLink, SetDelay, LinkStats),
// learning MAC addresses and flooding multicast like the bridge. Partition,
// Split, Loss and LossIP work the same on both kinds of lab. Measured on the
// project's VMs: about 20-40 us added per frame, a 200 us delay is honoured
// to within about 50 us, a 3 ms delay to within about 60 us.
//
// # Limits
//
//   - IPv4 only; IPv6 is off on the lab links by design.
//   - All hosts share the machine's clocks (namespaces cannot offset
//     CLOCK_REALTIME): per-host clock error must be simulated in the daemon
//     (timed --clock sim), and the real clock is the ground truth.
//   - A Lab's methods fail the test they were created with, so they must be
//     called from that test's goroutine, as with t.Fatal.
//   - WithSwitch runs the switch inside the test binary: a test that pins
//     every CPU also slows the network, as it would with a software switch.
//   - The kernel bridge's impairments act on whole frames at the bridge; the
//     switch's delay adds to its own 20-40 us per frame, and a busy test
//     binary (for example under -race) can hold delayed frames back by a
//     few milliseconds: assert on medians, with room.
//
// scripts/lab.sh builds the same labs from a shell (`lab.sh up N [--switch]`),
// running the switch as a process (command labswitch) in the bridge
// namespace.
package labnet
