// Package forge builds and sends the packets an attacker on the lab LAN
// would: synclab frames with any header values (sender, term, sequence,
// Lamport time), sealed with a key or not, sent from any local address or,
// as root, with a spoofed IPv4 source address.
//
// It exists for tests only: the attack tests of every daemon use it to show
// that a forged, replayed or absurd frame is refused and counted, never
// obeyed. It sends only where it is told; tests point it at loopback or at
// the network namespaces they created.
//
//	b, _ := forge.Frame(wire.Header{Kind: wire.KindCoordinator, Cluster: wire.ClusterID("synclab"),
//		Sender: 3, Receiver: 2, Term: 0xffffffff00000003, Seq: 1}, wire.Coordinator{}, nil)
//	err := forge.SendUDP(netip.AddrPort{}, target, b)
package forge
