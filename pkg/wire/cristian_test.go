package wire

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"testing"
	"time"
)

// TestTimeReplyGolden: the hand-written vector decodes to the documented
// fields and re-encodes byte for byte.
func TestTimeReplyGolden(t *testing.T) {
	raw := readHex(t, "time_reply_frame.hex")
	var f Frame
	if err := f.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	if f.Kind != KindTimeReply || f.Sender != 1 || f.Receiver != 9 || f.Cluster != ClusterID("lab") {
		t.Fatalf("header %+v", f.Header)
	}
	if want := time.Date(2026, 11, 22, 8, 0, 0, 500_000_000, time.UTC); !f.Xmt.Time().Equal(want) {
		t.Errorf("xmt %v, want %v", f.Xmt.Time(), want)
	}
	var r TimeReply
	if err := r.UnmarshalBinary(f.Payload); err != nil {
		t.Fatal(err)
	}
	want := TimeReply{Stratum: 8, Precision: -23, RootDelay: 16, RootDispersion: 32, ReferenceID: 0x7f000001,
		Origin: NTPTimeFromTime(time.Date(2026, 11, 22, 8, 0, 0, 250_000_000, time.UTC))}
	if r != want {
		t.Fatalf("reply %+v, want %+v", r, want)
	}
	payload, err := r.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Payload = payload
	out, err := f.AppendBinary(nil)
	if err != nil || !bytes.Equal(out, raw) {
		t.Fatalf("re-encoding: %v\n got % x\nwant % x", err, out, raw)
	}
}

func TestTimePayloadsRefuse(t *testing.T) {
	var req TimeRequest
	for _, b := range [][]byte{nil, make([]byte, TimeRequestLen-1), make([]byte, TimeRequestLen+1), append(make([]byte, TimeRequestLen-1), 1)} {
		if err := req.UnmarshalBinary(b); err == nil {
			t.Errorf("TimeRequest % x accepted", b)
		} else {
			requireDecodeError(t, err)
		}
	}
	good, _ := TimeReply{Stratum: 2}.AppendBinary(nil)
	bad := map[string][]byte{
		"short":    good[:TimeReplyLen-1],
		"long":     append(append([]byte{}, good...), 0),
		"leap 4":   append([]byte{4}, good[1:]...),
		"reserved": append(append([]byte{}, good[:offReplyReserved]...), append([]byte{1}, good[offReplyReserved+1:]...)...),
	}
	for name, b := range bad {
		var r TimeReply
		if err := r.UnmarshalBinary(b); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			requireDecodeError(t, err)
		}
	}
	if _, err := (TimeReply{Leap: 4}).AppendBinary(nil); err == nil {
		t.Error("leap 4 encoded")
	}
	// The request is never shorter than the reply: no amplification.
	if TimeRequestLen < TimeReplyLen {
		t.Fatalf("request %d bytes, reply %d", TimeRequestLen, TimeReplyLen)
	}
}

// TestAuthenticate: cluster and MAC are checked, addressing and replay are
// not (a stranger's repeated request passes, and leaves no state).
func TestAuthenticate(t *testing.T) {
	key := Key{ID: 3, Secret: bytes.Repeat([]byte{7}, 32)}
	mk := func(cluster uint32, sender uint32) []byte {
		p, _ := TimeRequest{}.AppendBinary(nil)
		f := Frame{Header: Header{Kind: KindTimeRequest, Cluster: cluster, Sender: sender, Receiver: 77}, Payload: p}
		b, err := f.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		return Seal(b, key)
	}
	check := func(v *Validator, raw []byte) error {
		var f Frame
		if err := f.UnmarshalBinary(raw); err != nil {
			t.Fatal(err)
		}
		return v.Authenticate(&f, raw)
	}
	lab := ClusterID("lab")
	v := NewValidator(lab, 1, []Key{key})
	raw := mk(lab, 9)
	for i := range 3 {
		if err := check(v, raw); err != nil {
			t.Fatalf("copy %d: %v", i, err)
		}
	}
	if len(v.windows) != 0 {
		t.Errorf("Authenticate kept %d replay windows", len(v.windows))
	}
	if err := check(v, mk(ClusterID("other"), 9)); !errors.Is(err, ErrWrongCluster) {
		t.Errorf("other cluster: %v", err)
	}
	forged := append([]byte{}, raw...)
	forged[len(forged)-1] ^= 1
	if err := check(v, forged); !errors.Is(err, ErrBadMAC) {
		t.Errorf("flipped MAC bit: %v", err)
	}
	if err := check(NewValidator(lab, 1, []Key{{ID: 4, Secret: key.Secret}}), raw); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("unknown key: %v", err)
	}
	// The MAC is HMAC-SHA256 over header and payload, truncated.
	m := hmac.New(sha256.New, key.Secret)
	m.Write(raw[:len(raw)-AuthTrailerLen])
	if !bytes.Equal(m.Sum(nil)[:MACLen], raw[len(raw)-MACLen:]) {
		t.Error("trailer is not HMAC-SHA256(header+payload)[:16]")
	}
}

func FuzzTimeRequest(f *testing.F) {
	p, _ := TimeRequest{}.AppendBinary(nil)
	f.Add(p)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r TimeRequest
		if err := r.UnmarshalBinary(b); err != nil {
			requireDecodeError(t, err)
			return
		}
		out, _ := r.AppendBinary(nil)
		if !bytes.Equal(out, b) {
			t.Fatalf("round trip % x -> % x", b, out)
		}
	})
}

func FuzzTimeReply(f *testing.F) {
	f.Add(readHex(f, "time_reply_frame.hex")[HeaderLen:])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r TimeReply
		if err := r.UnmarshalBinary(b); err != nil {
			requireDecodeError(t, err)
			return
		}
		out, err := r.AppendBinary(nil)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("round trip % x -> % x (%v)", b, out, err)
		}
	})
}
