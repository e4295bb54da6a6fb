// Package wire is synclab's bytes: the frame every synclab message travels
// in, the payloads of the message kinds, the 48-byte NTPv4 packet, and the
// authentication of both. It does no I/O and imports nothing outside the
// standard library, so every daemon, core, tool and test speaks exactly the
// same format.
//
// # Codecs
//
// Every wire structure has an ASCII diagram above its type, named offset
// constants, and a hand-written codec (the style of facebook/time's
// ntp/protocol): AppendBinary(b) appends the encoding to b (so a caller
// reuses one buffer), UnmarshalBinary(b) checks the length first, then the
// structure, and never allocates; a payload aliases the input. Decoders
// check structure only and fail with a *DecodeError whose Kind
// (DecodeTruncated, DecodeBadMagic, ...) is itself an error for errors.Is.
// Policy, whether a well-formed frame or NTP reply should be believed, lives
// elsewhere: in Validator for frames, in the NTP core for NTP replies.
// Reason maps any error of this package to a short stable label for drop
// counters.
//
// # Frames
//
// A frame is a 52-byte header (magic "SL", version, Kind, flags, payload
// length, cluster, sender, receiver, term, sequence, Lamport time, transmit
// timestamp), the payload, and an optional 20-byte trailer (key ID and
// truncated HMAC-SHA256). Kinds are append-only: a kind's number never
// changes meaning. Every kind is declared once, in the registry
// (registry.go: number, name, payload codec, class), and numbers are
// allotted by family (Blocks); Known, String, Info and Registered are
// read from it by the node, the trace decoder, the fuzz generators, the
// benchmarks and the docs' generated tables. The life of a frame, as internal/node drives it:
//
//	// Sender: encode once, then patch the time and seal right before the write.
//	hb, _ := wire.Heartbeat{Interval: 100, Alive: 3}.AppendBinary(nil)
//	f := wire.Frame{Header: wire.Header{
//		Kind: wire.KindHeartbeat, Cluster: wire.ClusterID("lab"),
//		Sender: 2, Seq: wire.Seq(incarnation, series, counter), Lamport: lamport,
//	}, Payload: hb}
//	b, err := f.AppendBinary(make([]byte, 0, wire.HeaderLen+len(hb)+wire.AuthTrailerLen))
//	wire.PatchXmt(b, wire.NTPTimeFromTime(clock.Now()))
//	b = wire.Seal(b, keys[0]) // when a key file is configured
//
//	// Receiver: structure, then policy, then the payload.
//	v := wire.NewValidator(wire.ClusterID("lab"), self, keys) // once
//	var f wire.Frame
//	if err := f.UnmarshalBinary(pkt); err != nil { count(wire.Reason(err)); return }
//	if err := v.Validate(&f, pkt); err != nil { count(wire.Reason(err)); return }
//	var hb wire.Heartbeat
//	err = hb.UnmarshalBinary(f.Payload)
//
// Validate checks, in order: cluster, sender is not us, addressed to us or
// to everyone, MAC (when keys are configured), and replay: each sender's
// sequence numbers must be new within a sliding window of ReplayWindow, like
// IPsec's. Sequence numbers carry the sender's incarnation and series in
// their high 32 bits (Seq), so a restarted sender is always newer than its
// previous life. Admit is Validate without the replay window, for callers
// that keep their own (internal/node keeps one per member, persists what
// it must across restarts, and checks the plausibility of what it is told;
// SeqWindow is the window it uses).
//
// Key files for frames are read by ParseKeyFile (format documented there).
//
// # NTP
//
// NTPTime and NTPShort are the RFC 5905 time formats with exact, rounded
// conversions and era handling (NTPTime.Time pivots so that 1968..2104 maps
// right; Sub is era-safe). NTPPacket is the 48-byte header. Symmetric-key
// NTP authentication follows chrony: ParseChronyKeys reads a chrony keys
// file, AppendNTPMAC signs, SplitNTPMAC and VerifyNTPMAC check; see
// ntpmac.go for the digest-length rules chrony applies and this package
// matches.
package wire
