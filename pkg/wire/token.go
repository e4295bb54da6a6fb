package wire

import (
	"encoding/binary"
	"slices"
)

// Payloads of the token ring (pkg/mutex/tokenring). Every one names the lock
// it is about (a token per lock), in a trailing name of 1 to MaxLockNameLen
// bytes of [A-Za-z0-9._:/@+-]. Generations are owned like bully terms:
// round<<32 | the ID of the member that created the token, so two members
// can never create the same generation.
//
// A token moves from a member to its successor on the members' TCP link
// and is acknowledged; when it may have been lost, a member proposes a new
// generation with a RingProbe (prepare), and members promise to refuse
// older generations; a member about to grant a lock first checks with a
// majority that no newer generation was promised (RingProbe, check).

// MaxLockNameLen is the longest lock name.
const MaxLockNameLen = 64

// MaxTokenWants is the most members a token can list as waiting for it,
// or as served (more than any lab ring).
const MaxTokenWants = 1024

// Token is the payload of KindToken: the right to grant one lock.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Name Len    | Reserved (0)  |          Want Count           |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           Hold: ms before a grant is allowed, after arrival   |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Generation (round<<32 | creator)             |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        Hop: passes since the generation was created           | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Fence: the last fence granted                 | 24
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        Wants: Want Count member IDs waiting for the lock      | 32
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|         Served Count          |         Reserved (0)          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Served: Served Count of (member ID, 4 bytes; its last        |
//	/  served want number, 8 bytes)                                 /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        |
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Served is Suzuki-Kasami's LN: for each member, the number of the last
// want of it (see ProbeWant) that was served, as that member set it when
// the token was last there; a member that overheard a want drops it when
// the token says it was served.
type Token struct {
	Name       string
	HoldMS     uint32 // a regenerated token's safety wait, carried as what is left of it
	Generation uint64
	Hop        uint64
	Fence      uint64
	Wants      []uint32
	Served     []WantServed
}

// WantServed is one entry of a token's Served list.
type WantServed struct {
	Member uint32 // non-zero
	Want   uint64 // the number of the member's last served want
}

// TokenAckStatus says what the receiver did with a token.
type TokenAckStatus uint8

const (
	// TokenAccepted: the receiver holds the token now (or already did: a
	// duplicate is acknowledged the same way).
	TokenAccepted TokenAckStatus = 1
	// TokenStale: the receiver promised a newer generation and dropped
	// the token; the ack's Generation is that newer one.
	TokenStale TokenAckStatus = 2

	tokenAckStatusEnd TokenAckStatus = 3
)

func (s TokenAckStatus) String() string {
	switch s {
	case TokenAccepted:
		return "accepted"
	case TokenStale:
		return "stale"
	}
	return "status(" + itoa(int(s)) + ")"
}

// TokenAck is the payload of KindTokenAck.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Name Len    |    Status     |         Reserved (0)          |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         Reserved (0)                          |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Generation (the token's; if stale, the receiver's newer)  |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Hop (the token's)                         | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        | 24
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type TokenAck struct {
	Name       string
	Status     TokenAckStatus
	Generation uint64
	Hop        uint64
}

// ProbeOp is what a RingProbe asks.
type ProbeOp uint8

const (
	// ProbeWant: the sender has a request waiting for the lock; a member
	// holding the idle token starts it moving. No reply. Its Generation is
	// the want's number (0: not numbered): a member's wants are numbered
	// in increasing order, and a token whose Served entry for the sender
	// is at least that number has served it.
	ProbeWant ProbeOp = 1
	// ProbePrepare: the sender proposes to create the token anew in the
	// probe's generation (it may be lost). A member holding the token
	// answers ProbeHave; one that promised a newer generation answers
	// ProbeStale; any other promises to refuse every older generation
	// from now on (durably) and answers ProbeOK.
	ProbePrepare ProbeOp = 2
	// ProbeCheck: the sender holds the token in the probe's generation
	// and is about to grant or renew: a member answers ProbeStale if it
	// promised a newer generation, else ProbeOK.
	ProbeCheck ProbeOp = 3
	// ProbeLocate: the sender waited too long for the token and asks
	// whether anyone has it (before proposing a new one, which would
	// doom a live token): a member answers ProbeHave if it holds the
	// token or has just sent it, else ProbeOK. A member holding it also
	// takes the probe as a want.
	ProbeLocate ProbeOp = 4
	// ProbeVouch: the sender has just taken a token from the receiver
	// (the probe's Generation is the token's) and asks it to vouch for it
	// before using it: the receiver answers ProbeOK, with the token's
	// Generation and Fence and the hold it had left in Lease Left, only if
	// it passed exactly that token to the sender as its last handoff and
	// does not hold it itself; anything else gets ProbeHave ("not the token
	// I passed you"). A token forged in a member's name is disowned before
	// it can grant a fence twice.
	ProbeVouch ProbeOp = 5

	probeOpEnd ProbeOp = 6
)

func (o ProbeOp) String() string {
	switch o {
	case ProbeWant:
		return "want"
	case ProbePrepare:
		return "prepare"
	case ProbeCheck:
		return "check"
	case ProbeLocate:
		return "locate"
	case ProbeVouch:
		return "vouch"
	}
	return "op(" + itoa(int(o)) + ")"
}

// RingProbe is the payload of KindRingProbe.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      Op       |   Name Len    |         Reserved (0)          |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        Nonce: matches replies to this probe                   |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Generation (prepare: proposed; check, vouch: the token's;    |  8
//	|  want: the want's number)                                     |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        | 16
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type RingProbe struct {
	Op         ProbeOp
	Name       string
	Nonce      uint32
	Generation uint64
}

// ProbeStatus is a member's answer to a prepare or a check.
type ProbeStatus uint8

const (
	// ProbeOK: prepare: promised; check: no newer generation promised;
	// locate: not here.
	ProbeOK ProbeStatus = 1
	// ProbeStale: a newer generation was promised (the reply's
	// Generation).
	ProbeStale ProbeStatus = 2
	// ProbeHave: (prepare, locate) the member holds the token, or has
	// just sent it and awaits the acknowledgement: the token is not lost.
	// Nothing was promised.
	ProbeHave ProbeStatus = 3

	probeStatusEnd ProbeStatus = 4
)

func (s ProbeStatus) String() string {
	switch s {
	case ProbeOK:
		return "ok"
	case ProbeStale:
		return "stale"
	case ProbeHave:
		return "have"
	}
	return "status(" + itoa(int(s)) + ")"
}

// ProbeHeld flags a ProbeHave reply whose member has granted the lock: the
// lease left says how long the token may reasonably stay there. In a
// ProbeOK reply to a prepare, a non-zero lease left is that of a grant the
// member made on a token it has since dropped: its client may not know yet,
// and the new token must not grant before it ends.
const ProbeHeld uint8 = 1 << 0

// ProbeConfirmKnown flags a ProbeOK reply to a prepare (a promise) whose
// Confirm Left is meaningful: how much longer a lease may run on what this
// member confirmed before it promised (a check it passed, or an earlier
// promise), as this member reckons it. Without the flag (a build that does
// not send it) the proposer knows nothing of the kind and waits the whole
// Hold.
const ProbeConfirmKnown uint8 = 1 << 1

// RingProbeReply is the payload of KindRingProbeReply.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      Op       |   Name Len    |    Status     |     Flags     |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Nonce (the probe's)                        |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| Generation (ok, stale: the member's promise; have: its token's) |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           Fence: the highest fence the member knows           | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Lease Left, ms (have: the grant's; ok: an orphaned grant's)  | 24
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Confirm Left, ms (ok to a prepare, with ProbeConfirmKnown; else 0) | 28
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        | 32
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Flags: bit 0 ProbeHeld, bit 1 ProbeConfirmKnown; other bits reserved,
// zero.
type RingProbeReply struct {
	Op          ProbeOp
	Name        string
	Status      ProbeStatus
	Flags       uint8
	Nonce       uint32
	Generation  uint64
	Fence       uint64
	LeaseLeftMS uint32
	// ConfirmLeftMS: see ProbeConfirmKnown; zero without the flag.
	ConfirmLeftMS uint32
}

const (
	tokenFixedLen      = 32
	tokenServedHeadLen = 4  // served count, reserved
	tokenServedLen     = 12 // member, want number
	tokenAckFixedLen   = 24
	ringProbeFixedLen  = 16
	probeReplyFixedLen = 32

	probeFlagsKnown = ProbeHeld | ProbeConfirmKnown

	tokenWhat      = "token"
	tokenAckWhat   = "token ack"
	ringProbeWhat  = "ring probe"
	probeReplyWhat = "ring probe reply"
)

// ValidLockName reports whether name can be a lock's name: 1 to
// MaxLockNameLen bytes of letters, digits and ._:/@+-.
func ValidLockName(name string) bool {
	if len(name) == 0 || len(name) > MaxLockNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '_' || c == ':' || c == '/' || c == '@' || c == '+' || c == '-':
		default:
			return false
		}
	}
	return true
}

func nameEncodeErr(what, name string) error {
	return &EncodeError{What: what, Field: "name length", Value: uint64(len(name)), Why: "not a valid lock name (1-64 bytes of [A-Za-z0-9._:/@+-])"}
}

// readName checks the trailing name of a payload: exactly n bytes left, a
// valid lock name. The string is allocated only on success.
func readName(what string, b []byte, n int) (string, error) {
	switch {
	case n == 0 || n > MaxLockNameLen:
		return "", decodeErr(what, DecodeBadField, "name length", n, -1)
	case len(b) < n:
		return "", decodeErr(what, DecodeTruncated, "name", len(b), n)
	case len(b) > n:
		return "", decodeErr(what, DecodeBadLength, "trailing bytes", len(b), n)
	}
	name := string(b)
	if !ValidLockName(name) {
		return "", decodeErr(what, DecodeBadField, "name", n, -1)
	}
	return name, nil
}

// AppendBinary appends the encoding of t to b. It fails only on a name
// that is not a valid lock name or too many wants: a caller's bug.
func (t Token) AppendBinary(b []byte) ([]byte, error) {
	if !ValidLockName(t.Name) {
		return b, nameEncodeErr(tokenWhat, t.Name)
	}
	if len(t.Wants) > MaxTokenWants {
		return b, &EncodeError{What: tokenWhat, Field: "want count", Value: uint64(len(t.Wants)), Why: "exceeds MaxTokenWants"}
	}
	if len(t.Served) > MaxTokenWants {
		return b, &EncodeError{What: tokenWhat, Field: "served count", Value: uint64(len(t.Served)), Why: "exceeds MaxTokenWants"}
	}
	if slices.Contains(t.Wants, 0) {
		return b, &EncodeError{What: tokenWhat, Field: "want", Value: 0, Why: "member IDs start at 1"}
	}
	for _, s := range t.Served {
		if s.Member == 0 {
			return b, &EncodeError{What: tokenWhat, Field: "served member", Value: 0, Why: "member IDs start at 1"}
		}
	}
	b = append(b, byte(len(t.Name)), 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(t.Wants)))
	b = binary.BigEndian.AppendUint32(b, t.HoldMS)
	b = binary.BigEndian.AppendUint64(b, t.Generation)
	b = binary.BigEndian.AppendUint64(b, t.Hop)
	b = binary.BigEndian.AppendUint64(b, t.Fence)
	for _, w := range t.Wants {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(t.Served)))
	b = append(b, 0, 0)
	for _, s := range t.Served {
		b = binary.BigEndian.AppendUint32(b, s.Member)
		b = binary.BigEndian.AppendUint64(b, s.Want)
	}
	return append(b, t.Name...), nil
}

// UnmarshalBinary decodes a Token. Want and served member IDs must be
// non-zero.
func (t *Token) UnmarshalBinary(b []byte) error {
	if len(b) < tokenFixedLen {
		return decodeErr(tokenWhat, DecodeTruncated, "", len(b), tokenFixedLen)
	}
	if b[1] != 0 {
		return decodeErr(tokenWhat, DecodeBadReserved, "reserved", int(b[1]), 0)
	}
	nw := int(binary.BigEndian.Uint16(b[2:]))
	if nw > MaxTokenWants {
		return decodeErr(tokenWhat, DecodeOversized, "want count", nw, MaxTokenWants)
	}
	end := tokenFixedLen + 4*nw
	if len(b) < end+tokenServedHeadLen {
		return decodeErr(tokenWhat, DecodeTruncated, "wants", len(b), end+tokenServedHeadLen)
	}
	ns := int(binary.BigEndian.Uint16(b[end:]))
	if ns > MaxTokenWants {
		return decodeErr(tokenWhat, DecodeOversized, "served count", ns, MaxTokenWants)
	}
	if b[end+2] != 0 || b[end+3] != 0 {
		return decodeErr(tokenWhat, DecodeBadReserved, "served reserved", int(b[end+2])<<8|int(b[end+3]), 0)
	}
	served := end + tokenServedHeadLen
	end = served + tokenServedLen*ns
	if len(b) < end {
		return decodeErr(tokenWhat, DecodeTruncated, "served", len(b), end)
	}
	name, err := readName(tokenWhat, b[end:], int(b[0]))
	if err != nil {
		return err
	}
	var wants []uint32
	if nw > 0 {
		wants = make([]uint32, nw)
		for i := range wants {
			if wants[i] = binary.BigEndian.Uint32(b[tokenFixedLen+4*i:]); wants[i] == 0 {
				return decodeErr(tokenWhat, DecodeBadField, "want", 0, -1)
			}
		}
	}
	var servedList []WantServed
	if ns > 0 {
		servedList = make([]WantServed, ns)
		for i := range servedList {
			at := served + tokenServedLen*i
			servedList[i] = WantServed{Member: binary.BigEndian.Uint32(b[at:]), Want: binary.BigEndian.Uint64(b[at+4:])}
			if servedList[i].Member == 0 {
				return decodeErr(tokenWhat, DecodeBadField, "served member", 0, -1)
			}
		}
	}
	*t = Token{
		Name:       name,
		HoldMS:     binary.BigEndian.Uint32(b[4:]),
		Generation: binary.BigEndian.Uint64(b[8:]),
		Hop:        binary.BigEndian.Uint64(b[16:]),
		Fence:      binary.BigEndian.Uint64(b[24:]),
		Wants:      wants,
		Served:     servedList,
	}
	return nil
}

// AppendBinary appends the encoding of a to b.
func (a TokenAck) AppendBinary(b []byte) ([]byte, error) {
	if !ValidLockName(a.Name) {
		return b, nameEncodeErr(tokenAckWhat, a.Name)
	}
	if a.Status == 0 || a.Status >= tokenAckStatusEnd {
		return b, &EncodeError{What: tokenAckWhat, Field: "status", Value: uint64(a.Status), Why: "undefined"}
	}
	b = append(b, byte(len(a.Name)), byte(a.Status), 0, 0, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint64(b, a.Generation)
	b = binary.BigEndian.AppendUint64(b, a.Hop)
	return append(b, a.Name...), nil
}

// UnmarshalBinary decodes a TokenAck.
func (a *TokenAck) UnmarshalBinary(b []byte) error {
	if len(b) < tokenAckFixedLen {
		return decodeErr(tokenAckWhat, DecodeTruncated, "", len(b), tokenAckFixedLen)
	}
	st := TokenAckStatus(b[1])
	if st == 0 || st >= tokenAckStatusEnd {
		return decodeErr(tokenAckWhat, DecodeBadField, "status", int(st), -1)
	}
	for i := 2; i < 8; i++ {
		if b[i] != 0 {
			return decodeErr(tokenAckWhat, DecodeBadReserved, "reserved", int(b[i]), 0)
		}
	}
	name, err := readName(tokenAckWhat, b[tokenAckFixedLen:], int(b[0]))
	if err != nil {
		return err
	}
	*a = TokenAck{
		Name:       name,
		Status:     st,
		Generation: binary.BigEndian.Uint64(b[8:]),
		Hop:        binary.BigEndian.Uint64(b[16:]),
	}
	return nil
}

// AppendBinary appends the encoding of p to b.
func (p RingProbe) AppendBinary(b []byte) ([]byte, error) {
	if !ValidLockName(p.Name) {
		return b, nameEncodeErr(ringProbeWhat, p.Name)
	}
	if p.Op == 0 || p.Op >= probeOpEnd {
		return b, &EncodeError{What: ringProbeWhat, Field: "op", Value: uint64(p.Op), Why: "undefined"}
	}
	b = append(b, byte(p.Op), byte(len(p.Name)), 0, 0)
	b = binary.BigEndian.AppendUint32(b, p.Nonce)
	b = binary.BigEndian.AppendUint64(b, p.Generation)
	return append(b, p.Name...), nil
}

// UnmarshalBinary decodes a RingProbe.
func (p *RingProbe) UnmarshalBinary(b []byte) error {
	if len(b) < ringProbeFixedLen {
		return decodeErr(ringProbeWhat, DecodeTruncated, "", len(b), ringProbeFixedLen)
	}
	op := ProbeOp(b[0])
	if op == 0 || op >= probeOpEnd {
		return decodeErr(ringProbeWhat, DecodeBadField, "op", int(op), -1)
	}
	if b[2] != 0 || b[3] != 0 {
		return decodeErr(ringProbeWhat, DecodeBadReserved, "reserved", int(b[2])<<8|int(b[3]), 0)
	}
	name, err := readName(ringProbeWhat, b[ringProbeFixedLen:], int(b[1]))
	if err != nil {
		return err
	}
	*p = RingProbe{
		Op:         op,
		Name:       name,
		Nonce:      binary.BigEndian.Uint32(b[4:]),
		Generation: binary.BigEndian.Uint64(b[8:]),
	}
	return nil
}

// AppendBinary appends the encoding of r to b.
func (r RingProbeReply) AppendBinary(b []byte) ([]byte, error) {
	switch {
	case !ValidLockName(r.Name):
		return b, nameEncodeErr(probeReplyWhat, r.Name)
	case r.Op == ProbeWant || r.Op == 0 || r.Op >= probeOpEnd:
		return b, &EncodeError{What: probeReplyWhat, Field: "op", Value: uint64(r.Op), Why: "only prepare, check and locate are answered"}
	case r.Status == 0 || r.Status >= probeStatusEnd:
		return b, &EncodeError{What: probeReplyWhat, Field: "status", Value: uint64(r.Status), Why: "undefined"}
	case r.Flags&^probeFlagsKnown != 0:
		return b, &EncodeError{What: probeReplyWhat, Field: "flags", Value: uint64(r.Flags), Why: "undefined bits"}
	case r.ConfirmLeftMS != 0 && r.Flags&ProbeConfirmKnown == 0:
		return b, &EncodeError{What: probeReplyWhat, Field: "confirm left", Value: uint64(r.ConfirmLeftMS), Why: "without ProbeConfirmKnown"}
	}
	b = append(b, byte(r.Op), byte(len(r.Name)), byte(r.Status), r.Flags)
	b = binary.BigEndian.AppendUint32(b, r.Nonce)
	b = binary.BigEndian.AppendUint64(b, r.Generation)
	b = binary.BigEndian.AppendUint64(b, r.Fence)
	b = binary.BigEndian.AppendUint32(b, r.LeaseLeftMS)
	b = binary.BigEndian.AppendUint32(b, r.ConfirmLeftMS)
	return append(b, r.Name...), nil
}

// UnmarshalBinary decodes a RingProbeReply.
func (r *RingProbeReply) UnmarshalBinary(b []byte) error {
	if len(b) < probeReplyFixedLen {
		return decodeErr(probeReplyWhat, DecodeTruncated, "", len(b), probeReplyFixedLen)
	}
	op, st, flags := ProbeOp(b[0]), ProbeStatus(b[2]), b[3]
	switch {
	case op == ProbeWant || op == 0 || op >= probeOpEnd:
		return decodeErr(probeReplyWhat, DecodeBadField, "op", int(op), -1)
	case st == 0 || st >= probeStatusEnd:
		return decodeErr(probeReplyWhat, DecodeBadField, "status", int(st), -1)
	case flags&^probeFlagsKnown != 0:
		return decodeErr(probeReplyWhat, DecodeBadFlags, "flags", int(flags), -1)
	}
	confirmLeft := binary.BigEndian.Uint32(b[28:])
	if confirmLeft != 0 && flags&ProbeConfirmKnown == 0 {
		return decodeErr(probeReplyWhat, DecodeBadReserved, "confirm left", clampInt(uint64(confirmLeft)), 0)
	}
	name, err := readName(probeReplyWhat, b[probeReplyFixedLen:], int(b[1]))
	if err != nil {
		return err
	}
	*r = RingProbeReply{
		Op:            op,
		Name:          name,
		Status:        st,
		Flags:         flags,
		Nonce:         binary.BigEndian.Uint32(b[4:]),
		Generation:    binary.BigEndian.Uint64(b[8:]),
		Fence:         binary.BigEndian.Uint64(b[16:]),
		LeaseLeftMS:   binary.BigEndian.Uint32(b[24:]),
		ConfirmLeftMS: confirmLeft,
	}
	return nil
}
