package wire

import (
	"encoding/hex"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/beevik/ntp"
)

// Interoperability with an independent NTP implementation, github.com/beevik/ntp,
// over loopback only: beevik/ntp queries a one-shot server built from this
// package's codecs. Its request must decode (and verify, with a key) here,
// and our reply must decode (and verify) there with the values we put in.

type beevikCase struct {
	name    string
	version int
	auth    ntp.AuthType
	typ     string
	nak     bool // answer with a crypto-NAK
	badKey  bool // sign the reply with the wrong secret
	wantErr error
}

func TestBeevikInterop(t *testing.T) {
	secret := []byte("synclab-interop-key!") // 20 bytes: within beevik's key size limits
	for _, c := range []beevikCase{
		{name: "plain v4", version: 4},
		{name: "plain v3", version: 3},
		{name: "MD5 v4", version: 4, auth: ntp.AuthMD5, typ: "MD5"},
		{name: "SHA1 v4", version: 4, auth: ntp.AuthSHA1, typ: "SHA1"},
		{name: "SHA256 v4 truncated", version: 4, auth: ntp.AuthSHA256, typ: "SHA256"},
		{name: "SHA256 v3 full", version: 3, auth: ntp.AuthSHA256, typ: "SHA256"},
		{name: "SHA512 v4 truncated", version: 4, auth: ntp.AuthSHA512, typ: "SHA512"},
		{name: "SHA512 v3 full", version: 3, auth: ntp.AuthSHA512, typ: "SHA512"},
		{name: "crypto-NAK", version: 4, auth: ntp.AuthSHA1, typ: "SHA1", nak: true, wantErr: ntp.ErrAuthNAK},
		{name: "bad MAC", version: 4, auth: ntp.AuthSHA1, typ: "SHA1", badKey: true, wantErr: ntp.ErrAuthFailed},
	} {
		t.Run(c.name, func(t *testing.T) { testBeevik(t, c, secret) })
	}
}

func testBeevik(t *testing.T, c beevikCase, secret []byte) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	defer conn.Close()
	key := NTPKey{ID: 42, Type: c.typ, Secret: secret}
	keys := []NTPKey{key}

	ref := time.Now().Add(-time.Minute).Truncate(time.Second)
	type result struct {
		req  NTPPacket
		recv time.Time
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() { done <- r }()
		buf := make([]byte, 1024)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, peer, err := conn.ReadFromUDP(buf)
		if err != nil {
			r.err = err
			return
		}
		r.recv = time.Now()
		pkt, keyID, digest, err := SplitNTPMAC(buf[:n])
		if err != nil {
			r.err = err
			return
		}
		if c.typ != "" {
			if r.err = VerifyNTPMAC(pkt, keyID, digest, keys); r.err != nil {
				return
			}
		} else if digest != nil {
			r.err = errors.New("unexpected MAC in an unauthenticated request")
			return
		}
		if r.err = r.req.UnmarshalBinary(pkt); r.err != nil {
			return
		}
		reply := NTPPacket{
			Version: r.req.Version, Mode: ModeServer, Stratum: 2, Poll: r.req.Poll, Precision: -24,
			RootDelay: 0x1000, RootDispersion: 0x0800, ReferenceID: 0x7f000001,
			Reference: NTPTimeFromTime(ref),
			Origin:    r.req.Transmit,
			Receive:   NTPTimeFromTime(r.recv),
		}
		reply.Transmit = reply.Receive.Add(50 * time.Microsecond)
		out, err := reply.AppendBinary(nil)
		if err != nil {
			r.err = err
			return
		}
		switch {
		case c.nak:
			out = append(out, 0, 0, 0, 0)
		case c.badKey:
			out = AppendNTPMAC(out, NTPKey{ID: key.ID, Type: key.Type, Secret: []byte("not-the-right-key!!!")})
		case c.typ != "":
			out = AppendNTPMAC(out, key)
		}
		_, r.err = conn.WriteToUDP(out, peer)
	}()

	opt := ntp.QueryOptions{Timeout: 3 * time.Second, Version: c.version}
	if c.typ != "" {
		opt.Auth = ntp.AuthOptions{Type: c.auth, Key: "HEX:" + hex.EncodeToString(secret), KeyID: key.ID}
	}
	resp, qerr := ntp.QueryWithOptions(conn.LocalAddr().String(), opt)
	r := <-done
	if r.err != nil {
		t.Fatalf("server side: %v", r.err)
	}
	if r.req.Mode != ModeClient || int(r.req.Version) != c.version || r.req.Transmit == 0 {
		t.Errorf("request as decoded here: %+v", r.req)
	}
	if c.wantErr != nil {
		if qerr == nil {
			qerr = resp.Validate()
		}
		if !errors.Is(qerr, c.wantErr) {
			t.Fatalf("beevik: %v, want %v", qerr, c.wantErr)
		}
		return
	}
	if qerr != nil {
		t.Fatalf("beevik query: %v", qerr)
	}
	if err := resp.Validate(); err != nil {
		t.Fatalf("beevik validate: %v", err)
	}
	if resp.Stratum != 2 || resp.ReferenceID != 0x7f000001 || resp.Version != c.version {
		t.Errorf("stratum %d refid %#x version %d", resp.Stratum, resp.ReferenceID, resp.Version)
	}
	if resp.RootDelay != 62500*time.Microsecond || resp.RootDispersion != 31250*time.Microsecond {
		t.Errorf("root delay %v dispersion %v", resp.RootDelay, resp.RootDispersion)
	}
	if d := resp.Precision - 60*time.Nanosecond; d < -1 || d > 1 { // 2^-24 s = 59.6 ns
		t.Errorf("precision %v", resp.Precision)
	}
	if !resp.ReferenceTime.Equal(ref) {
		t.Errorf("reference %v, want %v", resp.ReferenceTime, ref)
	}
	if d := resp.Timestamps.ServerRecv.Sub(r.recv); d < -time.Nanosecond || d > time.Nanosecond {
		t.Errorf("server receive %v, want %v", resp.Timestamps.ServerRecv, r.recv)
	}
	if d := resp.Timestamps.ServerXmit.Sub(resp.Timestamps.ServerRecv); d < 50*time.Microsecond-time.Nanosecond || d > 50*time.Microsecond+time.Nanosecond {
		t.Errorf("server transmit - receive = %v", d)
	}
	// beevik, like chrony, puts a random nonce in the request's transmit
	// field and keeps the real T1 to itself; the nonce must come back as
	// the origin, which Query checked (ErrServerResponseMismatch otherwise).
}
