package wire

import "testing"

func BenchmarkFrameAppendBinary(b *testing.B) {
	f := goldenFrame()
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.AppendBinary(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFrameUnmarshalBinary(b *testing.B) {
	raw := readHex(b, "heartbeat_frame_auth.hex")
	var f Frame
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if err := f.UnmarshalBinary(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSeal(b *testing.B) {
	f := goldenFrame()
	k := goldenKeys(b)[0]
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		enc, _ := f.AppendBinary(buf)
		_ = Seal(enc, k)
	}
}

func BenchmarkSealer(b *testing.B) {
	f := goldenFrame()
	s := NewSealer(goldenKeys(b)[0])
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		enc, _ := f.AppendBinary(buf)
		_ = s.Seal(enc)
	}
}

// BenchmarkValidate measures decode + validate of authenticated frames with
// increasing sequence numbers: the per-frame receive cost.
func BenchmarkValidate(b *testing.B) {
	keys := goldenKeys(b)
	v := NewValidator(testCluster, testSelf, keys)
	frames := make([][]byte, 4096)
	next := len(frames)
	var seq uint64
	var f Frame
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N { // not b.Loop: it does not support StopTimer
		if next == len(frames) {
			b.StopTimer() // sealing is the sender's cost, not measured here
			for i := range frames {
				seq++
				_, frames[i] = sealedFrame(b, &keys[0], 2, 0, seq)
			}
			next = 0
			b.StartTimer()
		}
		raw := frames[next]
		next++
		if err := f.UnmarshalBinary(raw); err != nil {
			b.Fatal(err)
		}
		if err := v.Validate(&f, raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNTPPacketUnmarshalBinary(b *testing.B) {
	raw := readHex(b, "ntp_server_reply.hex")
	var p NTPPacket
	b.ReportAllocs()
	for b.Loop() {
		if err := p.UnmarshalBinary(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNTPPacketAppendBinary(b *testing.B) {
	p := goldenReply()
	buf := make([]byte, 0, NTPHeaderLen)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.AppendBinary(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyNTPMAC(b *testing.B) {
	keys := goldenNTPKeys(b)
	raw := readHex(b, "ntp_reply_sha256.hex")
	pkt, id, digest, err := SplitNTPMAC(raw)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := VerifyNTPMAC(pkt, id, digest, keys); err != nil {
			b.Fatal(err)
		}
	}
}
