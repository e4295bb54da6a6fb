package server

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

const chronyKeys = `# chrony key file
1 MD5 HEX:6a3b5f0c1d2e3f405162738495a6b7c8
7 SHA256 HEX:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
9 SHA1 ASCII:lab-secret-sha1-key
`

func keys(t *testing.T) []wire.NTPKey {
	t.Helper()
	k, err := wire.ParseChronyKeys([]byte(chronyKeys))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func keyByID(t *testing.T, id uint32) wire.NTPKey {
	for _, k := range keys(t) {
		if k.ID == id {
			return k
		}
	}
	t.Fatalf("no key %d", id)
	return wire.NTPKey{}
}

func TestAuthenticatedRequests(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version uint8
		keyID   uint32
		whole   bool // the request carries the whole digest (ntpsec's ntpdig)
		size    int  // request and reply size
	}{
		{"MD5 v4", 4, 1, false, 68},
		{"SHA1 v4", 4, 9, false, 72},
		{"SHA256 v4 (digest truncated to 20, chrony, ntpd)", 4, 7, false, 72},
		{"SHA256 v4 (whole digest, ntpsec's ntpdig)", 4, 7, true, 84},
		{"SHA256 v3 (whole digest)", 3, 7, false, 84},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, Config{LocalStratum: 8, Keys: keys(t)})
			k := keyByID(t, tc.keyID)
			req := wire.AppendNTPMAC(request(tc.version, wire.ModeClient), k)
			if tc.whole {
				req = wire.AppendNTPMACWhole(request(tc.version, wire.ModeClient), k)
			}
			if len(req) != tc.size {
				t.Fatalf("request of %d bytes, want %d", len(req), tc.size)
			}
			d, _ := one(t, s, core.Datagram{Addr: clientAddr, Data: req, Time: t0})
			if !d.NTPStamp || d.NTPSign == nil {
				t.Fatal("a signed reply must be stamped at the write, then signed")
			}
			// What the daemon does right before the write: the
			// transmit time, then the MAC over it.
			binary.BigEndian.PutUint64(d.Data[wire.NTPXmtOffset:], uint64(wire.NTPTimeFromTime(t0.Add(time.Millisecond))))
			d.Data = d.NTPSign.Append(d.Data)
			if len(d.Data) != tc.size {
				t.Errorf("reply of %d bytes, want %d (the request's)", len(d.Data), tc.size)
			}
			var p wire.NTPPacket
			if err := p.UnmarshalBinary(d.Data); err != nil {
				t.Fatal(err)
			}
			pkt, id, digest, err := wire.SplitNTPMAC(d.Data)
			if err != nil || id != tc.keyID {
				t.Fatalf("reply MAC: key %d, %v", id, err)
			}
			if err := wire.VerifyNTPMAC(pkt, id, digest, keys(t)); err != nil {
				t.Errorf("reply MAC does not verify: %v", err)
			}
			if p.Transmit.Time().Sub(p.Receive.Time()) != time.Millisecond || p.Origin != t1 || p.Version != tc.version {
				t.Errorf("transmit %v receive %v origin %x version %d", p.Transmit.Time(), p.Receive.Time(), p.Origin, p.Version)
			}
			if st := s.Report(); st.Authenticated != 1 || st.Replies != 1 {
				t.Errorf("status %+v", st)
			}
		})
	}
}

func TestCryptoNAK(t *testing.T) {
	good := keyByID(t, 1)
	wrongSecret := good
	wrongSecret.Secret = []byte("not the server's secret")
	unknown := good
	unknown.ID = 42
	for _, tc := range []struct {
		name   string
		keys   []wire.NTPKey
		req    []byte
		reason string
	}{
		{"bad digest", keys(t), wire.AppendNTPMAC(request(4, wire.ModeClient), wrongSecret), "bad_mac"},
		{"unknown key", keys(t), wire.AppendNTPMAC(request(4, wire.ModeClient), unknown), "unknown_key"},
		{"no keys configured", nil, wire.AppendNTPMAC(request(4, wire.ModeClient), good), "unknown_key"},
		{"tampered header", keys(t), func() []byte {
			b := wire.AppendNTPMAC(request(4, wire.ModeClient), good)
			b[2] ^= 1 // poll
			return b
		}(), "bad_mac"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, Config{LocalStratum: 8, Keys: tc.keys})
			d, p := one(t, s, core.Datagram{Addr: clientAddr, Data: tc.req, Time: t0})
			if !wire.IsCryptoNAK(d.Data) {
				t.Fatalf("reply %x is not a crypto-NAK", d.Data)
			}
			if p.Origin != t1 || p.Mode != wire.ModeServer {
				t.Errorf("NAK header: origin %x mode %d", p.Origin, p.Mode)
			}
			st := s.Report()
			if st.CryptoNAK[tc.reason] != 1 || st.Replies != 0 || st.Authenticated != 0 {
				t.Errorf("status %+v", st)
			}
		})
	}
}

// TestLongTrailers: the rule for NTPv4 trailers longer than 24 bytes
// (wire.SplitNTPMAC). A whole digest with a key we lack gets a crypto-NAK;
// extension fields, even as long as a whole digest, get a plain reply;
// anything else is dropped and counted under bad_length.
func TestLongTrailers(t *testing.T) {
	unknown := keyByID(t, 7)
	unknown.ID = 42
	ext := func(typ uint16, n int) []byte {
		f := make([]byte, n)
		f[0], f[1], f[2], f[3] = byte(typ>>8), byte(typ), byte(n>>8), byte(n)
		return f
	}
	for _, tc := range []struct {
		name    string
		trailer []byte
		want    string // "nak", "plain" or a drop reason
	}{
		{"whole digest, unknown key", wire.AppendNTPMACWhole(request(4, wire.ModeClient), unknown)[wire.NTPHeaderLen:], "nak"},
		{"one 36-byte extension field", ext(0x0104, 36), "plain"},
		{"extension fields and a MAC", append(ext(0x0104, 28), wire.AppendNTPMAC(request(4, wire.ModeClient), keyByID(t, 1))[wire.NTPHeaderLen:]...), "plain"},
		{"28 bytes of garbage", make([]byte, 28), "bad_length"},
		{"44 bytes of garbage", append(ext(0x0104, 400)[:4], make([]byte, 40)...), "bad_length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, Config{LocalStratum: 8, Keys: keys(t)})
			req := append(request(4, wire.ModeClient), tc.trailer...)
			err := s.StepDatagram(core.Datagram{Addr: clientAddr, Data: req, Time: t0})
			out := s.Ready().Datagrams
			switch tc.want {
			case "nak":
				if err != nil || len(out) != 1 || !wire.IsCryptoNAK(out[0].Data) {
					t.Fatalf("%v, %d replies; want a crypto-NAK", err, len(out))
				}
			case "plain":
				if err != nil || len(out) != 1 || len(out[0].Data) != wire.NTPHeaderLen {
					t.Fatalf("%v, %d replies; want a plain 48-byte reply", err, len(out))
				}
			default:
				var de *DropError
				if !errors.As(err, &de) || de.Reason != tc.want || len(out) != 0 || s.Report().Dropped[tc.want] != 1 {
					t.Fatalf("%v, %d replies, dropped %v; want dropped as %s", err, len(out), s.Report().Dropped, tc.want)
				}
			}
		})
	}
}

func TestUnauthenticatedRequestWithKeysGetsPlainReply(t *testing.T) {
	s := newServer(t, Config{Keys: keys(t)})
	d, _ := one(t, s, core.Datagram{Addr: clientAddr, Data: request(4, wire.ModeClient), Time: t0})
	if len(d.Data) != wire.NTPHeaderLen || !d.NTPStamp {
		t.Errorf("reply of %d bytes, NTPStamp %v", len(d.Data), d.NTPStamp)
	}
}

func TestDropErrorMessage(t *testing.T) {
	s := newServer(t, Config{})
	err := s.StepDatagram(core.Datagram{Addr: clientAddr, Data: request(4, wire.ModeControl), Time: t0})
	if err == nil || !errors.Is(err, ErrMode) || err.Error() != "server: not a client request: mode 6 (mode_control)" {
		t.Errorf("error %q", err)
	}
}
