package wire

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

const (
	testCluster = 0xa51146d3 // ClusterID("lab")
	testSelf    = 5
)

// sealedFrame encodes and seals a frame from sender with seq, as a sender
// would, and decodes it as a receiver would.
func sealedFrame(t testing.TB, k *Key, sender uint32, receiver uint32, seq uint64) (*Frame, []byte) {
	t.Helper()
	f := goldenFrame()
	f.Sender, f.Receiver, f.Seq = sender, receiver, seq
	b, err := f.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	if k != nil {
		b = Seal(b, *k)
	}
	var g Frame
	if err := g.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	return &g, b
}

func TestValidatorGolden(t *testing.T) {
	keys := goldenKeys(t)
	v := NewValidator(ClusterID("lab"), testSelf, keys)
	raw := readHex(t, "heartbeat_frame_auth.hex")
	var f Frame
	if err := f.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(&f, raw); err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(&f, raw); !errors.Is(err, ErrReplay) {
		t.Fatalf("second delivery: %v", err)
	}
	// The unauthenticated twin is refused when keys are configured...
	plain := readHex(t, "heartbeat_frame.hex")
	if err := f.UnmarshalBinary(plain); err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(&f, plain); !errors.Is(err, ErrNoMAC) {
		t.Fatalf("no MAC: %v", err)
	}
	// ...and accepted without keys.
	if err := NewValidator(ClusterID("lab"), testSelf, nil).Validate(&f, plain); err != nil {
		t.Fatal(err)
	}
}

func TestValidatorSentinels(t *testing.T) {
	keys := goldenKeys(t)
	k1, k2 := keys[0], keys[1]
	stranger := Key{ID: 9, Secret: k1.Secret}
	wrongSecret := Key{ID: 1, Secret: k2.Secret}
	type tc struct {
		name string
		mk   func() (*Frame, []byte)
		want error
	}
	cases := []tc{
		{"wrong cluster", func() (*Frame, []byte) {
			f, b := sealedFrame(t, &k1, 2, 0, 1)
			f.Cluster++
			return f, b
		}, ErrWrongCluster},
		{"from self", func() (*Frame, []byte) { return sealedFrame(t, &k1, testSelf, 0, 1) }, ErrFromSelf},
		{"misdirected", func() (*Frame, []byte) { return sealedFrame(t, &k1, 2, testSelf+1, 1) }, ErrMisdirected},
		{"no MAC", func() (*Frame, []byte) { return sealedFrame(t, nil, 2, 0, 1) }, ErrNoMAC},
		{"unknown key", func() (*Frame, []byte) { return sealedFrame(t, &stranger, 2, 0, 1) }, ErrUnknownKey},
		{"bad MAC", func() (*Frame, []byte) { return sealedFrame(t, &wrongSecret, 2, 0, 1) }, ErrBadMAC},
	}
	labels := map[error]string{
		ErrWrongCluster: "wrong_cluster", ErrFromSelf: "from_self", ErrMisdirected: "misdirected",
		ErrNoMAC: "no_mac", ErrUnknownKey: "unknown_key", ErrBadMAC: "bad_mac",
	}
	for _, c := range cases {
		v := NewValidator(testCluster, testSelf, keys)
		f, b := c.mk()
		err := v.Validate(f, b)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if Reason(err) != labels[c.want] {
			t.Errorf("%s: Reason %q", c.name, Reason(err))
		}
		// A refused frame is not recorded: the genuine one still passes.
		g, gb := sealedFrame(t, &k1, 2, testSelf, 1)
		if err := v.Validate(g, gb); err != nil {
			t.Errorf("%s: genuine frame after the refused one: %v", c.name, err)
		}
	}
	// Second key accepted; addressed-to-self accepted.
	v := NewValidator(testCluster, testSelf, keys)
	f, b := sealedFrame(t, &k2, 3, testSelf, 10)
	if err := v.Validate(f, b); err != nil {
		t.Fatal(err)
	}
}

// The checks come in the documented order: a frame wrong in every way
// reports the first problem.
func TestValidatorOrder(t *testing.T) {
	v := NewValidator(testCluster, testSelf, goldenKeys(t))
	f, b := sealedFrame(t, nil, testSelf, testSelf+1, 1)
	f.Cluster++
	want := []error{ErrWrongCluster, ErrFromSelf, ErrMisdirected, ErrNoMAC}
	fixes := []func(){
		func() { f.Cluster-- },
		func() { f.Sender = 2 },
		func() { f.Receiver = 0 },
	}
	for i, w := range want {
		if err := v.Validate(f, b); !errors.Is(err, w) {
			t.Fatalf("step %d: %v, want %v", i, err, w)
		}
		if i < len(fixes) {
			fixes[i]()
		}
	}
}

func TestValidatorMACTamper(t *testing.T) {
	keys := goldenKeys(t)
	_, raw := sealedFrame(t, &keys[0], 2, 0, 1)
	// Flip one bit in every byte: header, payload, key ID, MAC.
	for i := range raw {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		var f Frame
		if err := f.UnmarshalBinary(b); err != nil {
			continue // structure broken (magic, version, flags...): refused earlier
		}
		v := NewValidator(f.Cluster, testSelf, keys)
		if f.Sender == testSelf || (f.Receiver != 0 && f.Receiver != testSelf) {
			continue
		}
		err := v.Validate(&f, b)
		region := "header"
		switch {
		case i >= HeaderLen+HeartbeatLen+4:
			region = "mac"
		case i >= HeaderLen+HeartbeatLen:
			region = "key id"
		case i >= HeaderLen:
			region = "payload"
		}
		want := ErrBadMAC
		if region == "key id" {
			want = ErrUnknownKey
			if f.KeyID == 2 { // 1^1^... can land on the other real key
				want = ErrBadMAC
			}
		}
		if !errors.Is(err, want) {
			t.Errorf("byte %d (%s) flipped: %v, want %v", i, region, err, want)
		}
	}
	// A raw slice that is not the frame's bytes fails closed.
	f, b := sealedFrame(t, &keys[0], 2, 0, 1)
	v := NewValidator(testCluster, testSelf, keys)
	if err := v.Validate(f, b[:len(b)-1]); err == nil {
		t.Fatal("mismatched raw accepted")
	}
}

func TestReplayWindow(t *testing.T) {
	v := NewValidator(testCluster, testSelf, nil)
	deliver := func(seq uint64) error {
		f, b := sealedFrame(t, nil, 2, 0, seq)
		return v.Validate(f, b)
	}
	base := uint64(7) << 32
	steps := []struct {
		seq  uint64
		want error
	}{
		{base + 100, nil},                        // first frame: anything goes
		{base + 101, nil},                        // in order
		{base + 105, nil},                        // gap
		{base + 103, nil},                        // reordered within the window
		{base + 103, ErrReplay},                  // duplicate
		{base + 105, ErrReplay},                  // duplicate of the newest
		{base + 100, ErrReplay},                  // duplicate of the first
		{base + 102, nil},                        // late but new
		{base + 99, nil},                         // before the first, inside the window
		{base + 105 + ReplayWindow, nil},         // jump: base+105 is now exactly a window behind
		{base + 105, ErrStale},                   // out of the window (and seen)
		{base + 106, nil},                        // oldest slot still inside the window
		{base + 106, ErrReplay},                  //
		{base + 104, ErrStale},                   // never seen, but too old to tell
		{base + 105 + ReplayWindow + 1<<31, nil}, // huge jump forward
		{base + 105 + ReplayWindow, ErrStale},    // everything before is stale now
		{base + 105 + ReplayWindow + 1<<31, ErrReplay},
		{base + 105 + ReplayWindow + 1<<31 - 1, nil},
		{6<<32 + 5, ErrStale}, // older incarnation
		{9<<32 + 1, nil},      // a restart: new incarnation
		{9<<32 + 1, ErrReplay},
	}
	for i, s := range steps {
		err := deliver(s.seq)
		if !errors.Is(err, s.want) || (s.want == nil && err != nil) {
			t.Fatalf("step %d seq %#x: %v, want %v", i, s.seq, err, s.want)
		}
	}
	// Forget readmits an old incarnation.
	v.Forget(2)
	if err := deliver(base + 1); err != nil {
		t.Fatalf("after Forget: %v", err)
	}
	// Windows are per sender.
	f, b := sealedFrame(t, nil, 3, 0, base+1)
	if err := v.Validate(f, b); err != nil {
		t.Fatal(err)
	}
}

// The window against a simple oracle: a set of every sequence number seen
// and the maximum, over a pseudo-random walk with reordering and duplicates.
func TestReplayWindowOracle(t *testing.T) {
	var w SeqWindow
	o := replayOracle{seen: map[uint64]bool{}}
	x := uint64(0x9e3779b97f4a7c15)
	seq := uint64(5000)
	for i := 0; i < 200000; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		var s uint64
		switch r := x % 100; {
		case r < 60:
			seq += 1 + x>>60
			s = seq
		case r < 62:
			seq += 1 + x>>40%5000 // jumps, some beyond the window
			s = seq
		default:
			s = seq - x>>32%(ReplayWindow+200) // late, duplicate or stale
		}
		if err := o.step(&w, s); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}

// replayOracle is the simple model of a SeqWindow: every sequence number
// it accepted, and the newest.
type replayOracle struct {
	seen    map[uint64]bool
	top     uint64
	started bool
}

// step checks w's verdict on sequence number s against the oracle's (the
// first is always accepted: the window starts there), and marks s in both
// when it is accepted.
func (o *replayOracle) step(w *SeqWindow, s uint64) error {
	var want error
	switch {
	case !o.started || s > o.top:
	case o.top-s >= ReplayWindow:
		want = ErrStale
	case o.seen[s]:
		want = ErrReplay
	}
	var got error
	if o.started {
		got = w.check(s)
	}
	if got != want {
		return fmt.Errorf("seq %d top %d: %v, want %v", s, o.top, got, want)
	}
	if got == nil {
		w.mark(s)
		o.seen[s] = true
		if !o.started || s > o.top {
			o.top = s
		}
		o.started = true
	}
	return nil
}

func TestValidatorConcurrent(t *testing.T) {
	keys := goldenKeys(t)
	v := NewValidator(testCluster, testSelf, keys)
	const senders, frames = 4, 300
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := uint32(1); s <= senders; s++ {
		if s == testSelf {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(1); i <= frames; i++ {
				f, b := sealedFrame(t, &keys[0], s, 0, i)
				if err := v.Validate(f, b); err != nil {
					errs <- fmt.Errorf("sender %d seq %d: %w", s, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestZeroAllocValidate(t *testing.T) {
	keys := goldenKeys(t)
	v := NewValidator(testCluster, testSelf, keys)
	frames := make([][]byte, 200)
	for i := range frames {
		_, frames[i] = sealedFrame(t, &keys[0], 2, 0, uint64(i+1))
	}
	var f Frame
	i := 0
	n := testing.AllocsPerRun(len(frames)-1, func() {
		if err := f.UnmarshalBinary(frames[i]); err != nil {
			t.Fatal(err)
		}
		if err := v.Validate(&f, frames[i]); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if n != 0 {
		t.Errorf("UnmarshalBinary+Validate: %v allocs per frame", n)
	}
}

func TestValidatorDuplicateKeyID(t *testing.T) {
	first := Key{ID: 1, Secret: []byte("first-secret-0123")}
	second := Key{ID: 1, Secret: []byte("second-secret-012")}
	v := NewValidator(testCluster, testSelf, []Key{first, second})
	f, b := sealedFrame(t, &first, 2, 0, 1)
	if err := v.Validate(f, b); err != nil {
		t.Fatalf("first key: %v", err)
	}
	f, b = sealedFrame(t, &second, 3, 0, 1)
	if err := v.Validate(f, b); !errors.Is(err, ErrBadMAC) {
		t.Fatalf("second key with the same ID: %v", err)
	}
}
