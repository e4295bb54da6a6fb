// Package node puts a sans-IO core inside everything that lies between it and
// bytes on a wire: framing, sequence numbers, Lamport stamping, the
// transmit-time patch, authentication, validation and the counting of every
// frame dropped and why.
//
// A Node is itself sans-IO. The daemon loop feeds it packets from real
// sockets and real time; the simulator feeds it packets from virtual links and
// virtual time. Both therefore run exactly the same decode -> validate -> Step
// and Ready -> encode path, so what is checked in simulation over many seeds is
// what runs on lab machines.
//
// Receiving:
//
//	n.Receive(node.Inbound{From: addr, Data: b, Time: clk.FromKernel(stamp)})
//
// decodes the frame (wire.Frame.UnmarshalBinary: structure only), rejects
// senders outside the member list, validates it (wire.Validator: cluster,
// misdirection, MAC, replay window), merges the Lamport time and steps the
// core. Every failure is counted under a short stable reason (wire.Reason) and
// returned, never panics, and costs the loop nothing else.
//
// Sending: n.Ready() turns the core's messages into encoded frames (one per
// destination, or one multicast frame for a broadcast when the cluster uses a
// group), each with the next sequence number of this incarnation. The bytes
// are finished by n.Finalize right before they are written: the transmit
// timestamp is patched into the header and the frame is sealed, so the MAC
// covers the time actually sent.
//
// Sequence numbers are incarnation<<40 | counter. The driver persists the
// incarnation and raises it at every start, so a restarted node's frames are
// always newer than anything it sent before and receivers' replay windows
// accept them at once.
package node
