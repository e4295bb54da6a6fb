package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"hash"
	"sync"
)

// ReplayWindow is how many sequence numbers below a sender's highest
// accepted one the Validator still tracks individually. A frame that
// arrives later than that, relative to the sender's newest, is refused as
// stale: it cannot be told from a replay. 1024 leaves ample room for
// reordering between a member's UDP and TCP paths and for frames a sender
// addressed to other members (every frame consumes a sequence number).
const ReplayWindow = 1024

// The replay window is a ring of bits indexed by sequence number modulo
// replayRingBits (the scheme of RFC 6479): advancing the window clears the
// 64-bit words it moves into, instead of shifting the whole bitmap. The
// ring is twice ReplayWindow so that every sequence number inside the
// window keeps its bit however the top advanced since it was marked.
const (
	replayRingBits  = 2 * ReplayWindow
	replayRingWords = replayRingBits / 64
)

// SeqWindow remembers which of a sender's recent sequence numbers were
// accepted: the highest (Top) and, individually, the ReplayWindow below
// it. Its zero value has accepted nothing and its Top is 0. It is not safe
// for concurrent use.
type SeqWindow struct {
	top  uint64 // highest sequence number accepted
	ring [replayRingWords]uint64
}

// Top is the highest sequence number marked.
func (w *SeqWindow) Top() uint64 { return w.top }

// Reset forgets everything and marks seq as the only one accepted.
func (w *SeqWindow) Reset(seq uint64) {
	*w = SeqWindow{}
	w.Mark(seq)
}

// Check says whether seq may be accepted, without recording it: nil, or
// ErrReplay (already marked) or ErrStale (a window or more below Top).
func (w *SeqWindow) Check(seq uint64) error { return w.check(seq) }

// Mark records seq as accepted; Check(seq) must have passed.
func (w *SeqWindow) Mark(seq uint64) { w.mark(seq) }

func (w *SeqWindow) check(seq uint64) error {
	if seq > w.top {
		return nil
	}
	if w.top-seq >= ReplayWindow {
		return ErrStale
	}
	if w.ring[(seq/64)%replayRingWords]&(1<<(seq%64)) != 0 {
		return ErrReplay
	}
	return nil
}

func (w *SeqWindow) mark(seq uint64) {
	if seq > w.top {
		// Clear the words the top moves into: they hold bits of
		// sequence numbers a whole ring older, long out of the window.
		cur, next := w.top/64, seq/64 // next >= cur
		if next-cur >= replayRingWords {
			w.ring = [replayRingWords]uint64{}
		} else {
			for blk := cur + 1; blk <= next; blk++ {
				w.ring[blk%replayRingWords] = 0
			}
		}
		w.top = seq
	}
	w.ring[(seq/64)%replayRingWords] |= 1 << (seq % 64)
}

// Validator applies synclab's delivery policy to decoded frames: cluster,
// addressing, authentication and replay protection. Decoding (structure)
// is Frame.UnmarshalBinary's job; a Validator only sees well-formed frames.
//
// It keeps one replay window per sender it accepted a frame from; the
// caller bounds that set by refusing non-members before calling Validate
// (as internal/node does).
//
// Restarts: a sender's sequence number carries its incarnation in the high
// bits (Seq), and the incarnation is persisted and incremented at every
// start, so a restarted sender's frames are always newer than anything it
// sent before and pass. The Validator's own windows live in memory only:
// after the receiver restarts, it accepts whatever it is sent first.
// internal/node does better (Admit, plus windows whose epochs it persists). A sender that lost its state (and so reuses an old
// incarnation) is refused as stale or replayed until its counter overtakes
// its old high-water mark, or until the receiver calls Forget for it.
//
// Without keys, nothing is authenticated: anyone who can send to the port
// can forge any frame, including one with a huge sequence number that makes
// the sender's real frames look stale. Replay protection is only as good as
// the MAC in front of it; configure keys wherever that matters.
//
// A Validator is safe for concurrent use.
type Validator struct {
	cluster uint32
	self    uint32

	mu      sync.Mutex
	keys    []validatorKey
	windows map[uint32]*SeqWindow
	sum     [sha256.Size]byte // scratch for MACs; guarded by mu
}

type validatorKey struct {
	id  uint32
	mac hash.Hash // HMAC-SHA256 keyed with the secret, Reset before use
}

// NewValidator returns a Validator for member self of the cluster with the
// given ClusterID. With no keys, frames need no MAC (and a MAC present is
// not checked); with keys, every frame must carry a MAC by one of them. If
// two keys share an ID, the first wins.
func NewValidator(cluster uint32, self uint32, keys []Key) *Validator {
	v := &Validator{
		cluster: cluster,
		self:    self,
		windows: make(map[uint32]*SeqWindow),
	}
	for _, k := range keys {
		if v.key(k.ID) != nil {
			continue
		}
		v.keys = append(v.keys, validatorKey{id: k.ID, mac: hmac.New(sha256.New, k.Secret)})
	}
	return v
}

func (v *Validator) key(id uint32) *validatorKey {
	for i := range v.keys {
		if v.keys[i].id == id {
			return &v.keys[i]
		}
	}
	return nil
}

// Validate decides whether a decoded frame may be delivered. raw must be the
// exact bytes f was decoded from: the MAC covers them. Checks run in this
// order, and the first failure is returned (wrapping its sentinel, with
// details): ErrWrongCluster, ErrFromSelf, ErrMisdirected, ErrNoMAC,
// ErrUnknownKey, ErrBadMAC, then ErrReplay or ErrStale. Only a frame that
// passes everything is recorded in its sender's replay window, so a forged
// or misdirected copy can never shadow the genuine frame.
//
// On success it does not allocate (after the first frame from a sender).
func (v *Validator) Validate(f *Frame, raw []byte) error {
	if err := v.Admit(f, raw); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()

	w := v.windows[f.Sender]
	if w == nil {
		w = new(SeqWindow)
		v.windows[f.Sender] = w
		w.mark(f.Seq)
		return nil
	}
	if err := w.check(f.Seq); err != nil {
		return fmt.Errorf("%w: seq %#x from %d, newest %#x", err, f.Seq, f.Sender, w.top)
	}
	w.mark(f.Seq)
	return nil
}

// Admit applies every check of Validate but the replay window, in the same
// order: cluster, not from self, addressed to us or to everyone, MAC. It
// keeps no state per sender; a caller that keeps its own windows (internal
// /node, which also persists them) uses it instead of Validate.
func (v *Validator) Admit(f *Frame, raw []byte) error {
	if f.Cluster != v.cluster {
		return fmt.Errorf("%w: cluster %08x, want %08x", ErrWrongCluster, f.Cluster, v.cluster)
	}
	if f.Sender == v.self {
		return ErrFromSelf
	}
	if f.Receiver != 0 && f.Receiver != v.self {
		return fmt.Errorf("%w: to %d", ErrMisdirected, f.Receiver)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.checkMAC(f, raw)
}

// Authenticate applies only the cluster and MAC checks of Validate, for
// frames exchanged with hosts that need not be members (Cristian's request
// and reply): it keeps no replay window, so it cannot be made to grow by
// strangers, and it checks no addressing. Its callers prove freshness
// otherwise: a reply must echo the transmit timestamp of an outstanding
// request, and a request changes nothing at the server.
func (v *Validator) Authenticate(f *Frame, raw []byte) error {
	if f.Cluster != v.cluster {
		return fmt.Errorf("%w: cluster %08x, want %08x", ErrWrongCluster, f.Cluster, v.cluster)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.checkMAC(f, raw)
}

// VerifyMAC applies only the MAC check of Validate: nil when the frame
// carries a MAC by one of the validator's keys over raw (or the
// validator has no keys). It keeps no state and checks nothing else: a
// caller uses it to learn whether a frame refused for another reason
// (another cluster's ID: a member configured with another cluster name)
// comes from a holder of the key, never to deliver one.
func (v *Validator) VerifyMAC(f *Frame, raw []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.checkMAC(f, raw)
}

// checkMAC verifies f's MAC over raw when the validator has keys. v.mu
// must be held (the MACs and the scratch sum are shared).
func (v *Validator) checkMAC(f *Frame, raw []byte) error {
	if len(v.keys) == 0 {
		return nil
	}
	if f.Flags&FlagAuth == 0 {
		return fmt.Errorf("%w: from %d", ErrNoMAC, f.Sender)
	}
	k := v.key(f.KeyID)
	if k == nil {
		return fmt.Errorf("%w: key %d from %d", ErrUnknownKey, f.KeyID, f.Sender)
	}
	signed := len(raw) - AuthTrailerLen
	if signed != HeaderLen+len(f.Payload)+len(f.Vector) {
		// Not the bytes f came from: a caller bug, but it must
		// fail closed.
		return decodeErr(frameWhat, DecodeBadLength, "raw bytes do not match the frame", len(raw), HeaderLen+len(f.Payload)+len(f.Vector)+AuthTrailerLen)
	}
	k.mac.Reset()
	k.mac.Write(raw[:signed])
	sum := k.mac.Sum(v.sum[:0])
	if !hmac.Equal(sum[:MACLen], f.MAC[:]) {
		return fmt.Errorf("%w: key %d from %d", ErrBadMAC, f.KeyID, f.Sender)
	}
	return nil
}

// Forget drops the replay window of sender, so that its next frame is
// accepted whatever its sequence number. Use it only to readmit a member
// known to have lost its persisted incarnation (an operator's decision):
// until that member's new frames arrive, anyone holding the key can replay
// its recorded frames once more.
func (v *Validator) Forget(sender uint32) {
	v.mu.Lock()
	delete(v.windows, sender)
	v.mu.Unlock()
}
