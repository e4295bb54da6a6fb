package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// Every decoder: never panics; fails only with its typed error; and what it
// accepts, the encoder reproduces byte for byte.

func addHexSeeds(f *testing.F, names ...string) {
	for _, n := range names {
		f.Add(readHex(f, n))
	}
}

func requireDecodeError(t *testing.T, err error) {
	t.Helper()
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %T %v, want *DecodeError", err, err)
	}
	if Reason(err) == "other" {
		t.Fatalf("no reason label for %v", err)
	}
}

func FuzzFrame(f *testing.F) {
	addHexSeeds(f, "heartbeat_frame.hex", "heartbeat_frame_auth.hex", "time_reply_frame.hex")
	f.Add([]byte("SL"))
	for _, seal := range []bool{false, true} {
		f.Add(vectorFrame(f, seal, vectorBlock(1, 3, 2, 7)))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr Frame
		if err := fr.UnmarshalBinary(b); err != nil {
			requireDecodeError(t, err)
			return
		}
		out, err := fr.AppendBinary(nil)
		if err != nil {
			t.Fatalf("decoded frame does not encode: %v", err)
		}
		if fr.Flags&FlagAuth != 0 {
			out[offFlags] |= FlagAuth
			out = binary.BigEndian.AppendUint32(out, fr.KeyID)
			out = append(out, fr.MAC[:]...)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("round trip\n got % x\nwant % x", out, b)
		}
		// Validation of arbitrary well-formed frames never panics.
		v := NewValidator(fr.Cluster, fr.Receiver, []Key{{ID: fr.KeyID, Secret: []byte("0123456789abcdef")}})
		_ = v.Validate(&fr, b)
	})
}

func FuzzHeartbeat(f *testing.F) {
	f.Add(readHex(f, "heartbeat_frame.hex")[HeaderLen:])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var hb Heartbeat
		if err := hb.UnmarshalBinary(b); err != nil {
			requireDecodeError(t, err)
			return
		}
		out, _ := hb.AppendBinary(nil)
		if !bytes.Equal(out, b) {
			t.Fatalf("round trip % x -> % x", b, out)
		}
	})
}

func FuzzEpochRefused(f *testing.F) {
	f.Add([]byte{0, 0, 3, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var e EpochRefused
		if err := e.UnmarshalBinary(b); err != nil {
			requireDecodeError(t, err)
			return
		}
		out, _ := e.AppendBinary(nil)
		if !bytes.Equal(out, b) {
			t.Fatalf("round trip % x -> % x", b, out)
		}
	})
}

func FuzzNTPPacket(f *testing.F) {
	addHexSeeds(f, "ntp_client_request.hex", "ntp_server_reply.hex", "ntp_reply_md5.hex", "ntp_reply_sha256_v3.hex")
	f.Fuzz(func(t *testing.T, b []byte) {
		var p NTPPacket
		if err := p.UnmarshalBinary(b); err != nil {
			requireDecodeError(t, err)
			return
		}
		out, err := p.AppendBinary(nil)
		if err != nil {
			t.Fatalf("decoded packet does not encode: %v", err)
		}
		if !bytes.Equal(out, b[:NTPHeaderLen]) {
			t.Fatalf("round trip\n got % x\nwant % x", out, b[:NTPHeaderLen])
		}
		_ = p.KissCode()
	})
}

func FuzzSplitNTPMAC(f *testing.F) {
	addHexSeeds(f, "ntp_server_reply.hex", "ntp_reply_md5.hex", "ntp_reply_sha1.hex", "ntp_reply_sha256.hex", "ntp_reply_sha256_v3.hex")
	f.Add(append(readHex(f, "ntp_server_reply.hex"), 0, 0, 0, 0))
	keys := goldenNTPKeys(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		pkt, keyID, digest, err := SplitNTPMAC(b)
		if err != nil {
			requireDecodeError(t, err)
			return
		}
		out := bytes.Clone(pkt)
		if digest != nil {
			out = binary.BigEndian.AppendUint32(out, keyID)
			out = append(out, digest...)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("round trip\n got % x\nwant % x", out, b)
		}
		if IsCryptoNAK(b) != (digest != nil && len(digest) == 0) {
			t.Fatalf("crypto-NAK disagreement")
		}
		err = VerifyNTPMAC(pkt, keyID, digest, keys)
		if err != nil && !errors.Is(err, ErrNTPBadMAC) && !errors.Is(err, ErrNTPUnknownKey) {
			t.Fatalf("verify: %v", err)
		}
	})
}

// Text formats cannot round-trip byte for byte (comments, spacing): what is
// checked is that the canonical form parses back to the same keys.
func FuzzParseKeyFile(f *testing.F) {
	f.Add(readFile(f, "keys.txt"))
	f.Add([]byte("1 hex:00112233445566778899aabbccddeeff # c\n\n2 00112233445566778899AABBCCDDEEFF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := ParseKeyFile(b)
		if err != nil {
			var kf *KeyFileError
			if !errors.As(err, &kf) || kf.Line < 1 {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		again, err := ParseKeyFile(FormatKeyFile(keys))
		if err != nil || len(again) != len(keys) {
			t.Fatalf("canonical form: %v (%d keys, want %d)", err, len(again), len(keys))
		}
		for i := range keys {
			if again[i].ID != keys[i].ID || !bytes.Equal(again[i].Secret, keys[i].Secret) || len(keys[i].Secret) < MinKeyLen {
				t.Fatalf("key %d: %+v vs %+v", i, again[i], keys[i])
			}
		}
	})
}

func FuzzParseChronyKeys(f *testing.F) {
	f.Add(readFile(f, "chrony.keys"))
	f.Add([]byte("1 abc\n# x\n2 SHA1 ASCII:x#y\n3 sha512 HEX:00ff\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := ParseChronyKeys(b)
		if err != nil {
			var kf *KeyFileError
			if !errors.As(err, &kf) || kf.Line < 1 {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		again, err := ParseChronyKeys(FormatChronyKeys(keys))
		if err != nil || len(again) != len(keys) {
			t.Fatalf("canonical form: %v (%d keys, want %d)", err, len(again), len(keys))
		}
		for i := range keys {
			if again[i].ID != keys[i].ID || again[i].Type != keys[i].Type || !bytes.Equal(again[i].Secret, keys[i].Secret) {
				t.Fatalf("key %d: %+v vs %+v", i, again[i], keys[i])
			}
		}
	})
}

// The replay window against the oracle of TestReplayWindowOracle, driven by
// the fuzzer: each 2-byte step is a signed offset from the newest sequence
// number.
func FuzzReplayWindow(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0xff, 0xff, 0, 5, 0x80, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var w SeqWindow
		o := replayOracle{seen: map[uint64]bool{}, top: 1 << 40}
		for ; len(b) >= 2; b = b[2:] {
			s := o.top + uint64(int64(int16(binary.BigEndian.Uint16(b))))
			if err := o.step(&w, s); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func FuzzConfigAnnounce(f *testing.F) {
	b, err := testConfigAnnounce().AppendBinary(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{})
	f.Add(b[:40])
	f.Fuzz(func(t *testing.T, b []byte) {
		var c ConfigAnnounce
		if err := c.UnmarshalBinary(b); err != nil {
			requireDecodeError(t, err)
			return
		}
		out, err := c.AppendBinary(nil)
		if err != nil {
			t.Fatalf("decoded announcement does not encode: %v", err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("round trip % x -> % x", b, out)
		}
	})
}

func FuzzStatusQuery(f *testing.F) {
	b, _ := StatusQuery{ID: 42}.AppendBinary(nil)
	f.Add(b)
	f.Add(b[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		var q StatusQuery
		if err := q.UnmarshalBinary(b); err != nil {
			requireDecodeError(t, err)
			return
		}
		if out, _ := q.AppendBinary(nil); !bytes.Equal(out, b) {
			t.Fatalf("round trip % x -> % x", b, out)
		}
	})
}

func FuzzStatusReport(f *testing.F) {
	b, err := testStatusReport().AppendBinary(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{})
	f.Add(b[:70])
	f.Fuzz(func(t *testing.T, b []byte) {
		var r StatusReport
		if err := r.UnmarshalBinary(b); err != nil {
			requireDecodeError(t, err)
			return
		}
		out, err := r.AppendBinary(nil)
		if err != nil {
			t.Fatalf("decoded report does not encode: %v", err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("round trip % x -> % x", b, out)
		}
	})
}

func FuzzTraceQuery(f *testing.F) {
	b, _ := TraceQuery{ID: 42, Window: 1, After: 7, From: 99}.AppendBinary(nil)
	f.Add(b)
	f.Add(b[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		var q TraceQuery
		if err := q.UnmarshalBinary(b); err != nil {
			requireDecodeError(t, err)
			return
		}
		if out, _ := q.AppendBinary(nil); !bytes.Equal(out, b) {
			t.Fatalf("round trip % x -> % x", b, out)
		}
	})
}

func FuzzTraceChunk(f *testing.F) {
	b, _ := TraceChunk{Flags: TraceFresh, QueryID: 42, Window: 1, Offset: 7, End: 20, Data: []byte(`{"t":1}` + "\n")}.AppendBinary(nil)
	f.Add(b)
	f.Add(b[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		var c TraceChunk
		if err := c.UnmarshalBinary(b); err != nil {
			requireDecodeError(t, err)
			return
		}
		if len(c.Data) > MaxTraceChunkData || c.Offset+uint64(len(c.Data)) > c.End {
			t.Fatalf("accepted %+v", c)
		}
		if out, _ := c.AppendBinary(nil); !bytes.Equal(out, b) {
			t.Fatalf("round trip % x -> % x", b, out)
		}
	})
}
