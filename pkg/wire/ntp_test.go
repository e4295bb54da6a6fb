package wire

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"
)

var (
	goldenT1  = NTPTimeFromTime(time.Date(2026, 11, 22, 8, 0, 0, 250_000_000, time.UTC))
	goldenT2  = NTPTimeFromTime(time.Date(2026, 11, 22, 8, 0, 0, 250_125_000, time.UTC))
	goldenT3  = NTPTimeFromTime(time.Date(2026, 11, 22, 8, 0, 0, 250_175_000, time.UTC))
	goldenRef = NTPTimeFromTime(time.Date(2026, 11, 22, 7, 59, 0, 0, time.UTC))
)

func goldenRequest() NTPPacket {
	return NTPPacket{Version: 4, Mode: ModeClient, Poll: 6, Precision: -20, Transmit: goldenT1}
}

func goldenReply() NTPPacket {
	return NTPPacket{
		Leap: LeapNone, Version: 4, Mode: ModeServer, Stratum: 2, Poll: 6, Precision: -24,
		RootDelay: 0x1000, RootDispersion: 0x0800, ReferenceID: 0x7f000001,
		Reference: goldenRef, Origin: goldenT1, Receive: goldenT2, Transmit: goldenT3,
	}
}

func TestNTPPacketGolden(t *testing.T) {
	for _, c := range []struct {
		file string
		want NTPPacket
	}{
		{"ntp_client_request.hex", goldenRequest()},
		{"ntp_server_reply.hex", goldenReply()},
	} {
		raw := readHex(t, c.file)
		var p NTPPacket
		if err := p.UnmarshalBinary(raw); err != nil {
			t.Fatal(err)
		}
		if p != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.file, p, c.want)
		}
		enc, err := c.want.AppendBinary(nil)
		if err != nil || !bytes.Equal(enc, raw) {
			t.Errorf("%s: encoding % x (%v)", c.file, enc, err)
		}
	}
	// The reply's numbers, as the NTP core will read them.
	r := goldenReply()
	if d := r.Receive.Sub(r.Origin); d != 125*time.Microsecond {
		t.Errorf("T2-T1 = %v", d)
	}
	if d := r.Transmit.Sub(r.Receive); d != 50*time.Microsecond {
		t.Errorf("T3-T2 = %v", d)
	}
	if r.RootDelay.Duration() != 62500*time.Microsecond || r.RootDispersion.Duration() != 31250*time.Microsecond {
		t.Errorf("root delay %v dispersion %v", r.RootDelay.Duration(), r.RootDispersion.Duration())
	}
}

func TestNTPPacketIgnoresTrailer(t *testing.T) {
	raw := readHex(t, "ntp_reply_sha1.hex")
	var p NTPPacket
	if err := p.UnmarshalBinary(raw); err != nil || p != goldenReply() {
		t.Fatalf("%+v %v", p, err)
	}
	err := p.UnmarshalBinary(raw[:NTPHeaderLen-1])
	if !errors.Is(err, DecodeTruncated) || Reason(err) != "ntp_truncated" {
		t.Fatalf("short: %v (%s)", err, Reason(err))
	}
}

func TestNTPPacketBits(t *testing.T) {
	// Every first byte decodes and re-encodes to itself.
	for i := 0; i < 256; i++ {
		b := make([]byte, NTPHeaderLen)
		b[0] = byte(i)
		var p NTPPacket
		if err := p.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if p.Leap != byte(i)>>6 || p.Version != byte(i)>>3&7 || p.Mode != byte(i)&7 {
			t.Fatalf("%#x: %+v", i, p)
		}
		enc, err := p.AppendBinary(nil)
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("%#x: % x %v", i, enc, err)
		}
	}
	for _, p := range []NTPPacket{{Leap: 4}, {Version: 8}, {Mode: 8}} {
		if _, err := p.AppendBinary(nil); !errors.As(err, new(*EncodeError)) {
			t.Errorf("%+v: %v", p, err)
		}
	}
	if NTPXmtOffset != 40 || NTPHeaderLen != 48 {
		t.Fatal("offsets")
	}
	// NTPXmtOffset points at the transmit timestamp.
	b, _ := (&NTPPacket{Transmit: 0x0102030405060708}).AppendBinary(nil)
	if !bytes.Equal(b[NTPXmtOffset:NTPXmtOffset+8], []byte{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatal("NTPXmtOffset")
	}
}

func TestKissCodeAndRefID(t *testing.T) {
	p := NTPPacket{Stratum: 0, ReferenceID: RefIDFromText("RATE")}
	if p.KissCode() != "RATE" {
		t.Errorf("kiss %q", p.KissCode())
	}
	p.ReferenceID = RefIDFromText("GPS")
	if p.KissCode() != "GPS" || p.ReferenceID != 0x47505300 {
		t.Errorf("GPS: %q %#x", p.KissCode(), p.ReferenceID)
	}
	p.Stratum = 1
	if p.KissCode() != "" {
		t.Error("kiss code on stratum 1")
	}
	if RefIDText(0x7f000001) != "" || RefIDText(0) != "" || RefIDText(0x41004200) != "" {
		t.Error("non-text refids read as text")
	}
	if id := RefIDFromAddr(netip.MustParseAddr("127.0.0.1")); id != 0x7f000001 {
		t.Errorf("v4 %#x", id)
	}
	if id := RefIDFromAddr(netip.MustParseAddr("::ffff:10.77.0.2")); id != 0x0a4d0002 {
		t.Errorf("mapped %#x", id)
	}
	// IPv6: the first 4 bytes of the MD5 of the 16 address bytes
	// (python3: hashlib.md5(bytes(15)+b'\x01').hexdigest()[:8]).
	if id := RefIDFromAddr(netip.MustParseAddr("::1")); id != 0xcf404dc8 {
		t.Errorf("v6 %#x", id)
	}
}

func TestZeroAllocNTPPacket(t *testing.T) {
	raw := readHex(t, "ntp_server_reply.hex")
	var p NTPPacket
	buf := make([]byte, 0, NTPHeaderLen)
	if n := testing.AllocsPerRun(100, func() {
		if err := p.UnmarshalBinary(raw); err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendBinary(buf); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("NTPPacket codec: %v allocs", n)
	}
}
