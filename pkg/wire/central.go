package wire

import "encoding/binary"

// Payloads of the central coordinator (pkg/mutex/central). One elected
// member, the coordinator, keeps a FIFO queue per lock; the others ask it
// (CentralRequest), it grants (CentralGrant), they give the lock back
// (CentralRelease): three messages per entry. Leases are renewed through
// the coordinator (CentralRenew, answered by KindCentralRenewed, a
// CentralGrant). The coordinator calls for its members' support every beat
// (CentralBeat); each answers with its whole view of its own requests
// (CentralSync), which is also how a newly elected coordinator rebuilds its
// queue and learns which leases an older coordinator granted.
//
// Every request is named by its member's incarnation (a counter the member
// raises, durably, at every start) and a sequence number (the member's
// request ID in that incarnation, from 1). A member counts a lease from the
// moment it sent a frame the coordinator echoes (Stamp, Echo): never from a
// grant's arrival, so a grant that was slow on the wire cannot make a lease
// end later than the coordinator believes.
//
// Decoders check structure only (names, enums, reserved bytes, lengths,
// counts, flags, the consistency of a sync entry); what a value means for
// the protocol (a fence of the right term, a lease within the cluster's
// bounds) the core checks.

// CentralMode is a request's mode on the wire: 0 exclusive, 1 shared.
type CentralMode uint8

const (
	CentralExclusive CentralMode = 0
	CentralShared    CentralMode = 1

	centralModeEnd CentralMode = 2
)

// CentralRequest is the payload of KindCentralRequest.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Name Len    |     Mode      |         Reserved (0)          |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Incarnation of the member                     |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Seq: the request, in the incarnation          |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Stamp: this frame's stamp                     | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Lease, ms                                     | 20
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        | 24
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type CentralRequest struct {
	Name        string
	Mode        CentralMode
	Incarnation uint32
	Seq         uint64
	Stamp       uint32
	LeaseMS     uint32
}

// CentralGrant is the payload of KindCentralGrant and KindCentralRenewed:
// request Seq of Incarnation holds lock Name with Fence for LeaseMS, counted
// from when the member sent its frame stamped Echo.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Name Len    |     Mode      |         Reserved (0)          |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Incarnation of the member                     |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Seq: the request                              |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Fence                                         | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Echo: the member's stamp the lease counts from| 24
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Lease, ms                                     | 28
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        | 32
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type CentralGrant struct {
	Name        string
	Mode        CentralMode
	Incarnation uint32
	Seq         uint64
	Fence       uint64
	Echo        uint32
	LeaseMS     uint32
}

// CentralRelease is the payload of KindCentralRelease: request Seq gives
// its lock back (Fence, its grant's) or, with Fence 0, is withdrawn.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Name Len    |                 Reserved (0)                  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Incarnation of the member                     |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Seq: the request                              |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Fence (0: a waiting request withdrawn)        | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        | 24
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type CentralRelease struct {
	Name        string
	Incarnation uint32
	Seq         uint64
	Fence       uint64
}

// CentralRenew is the payload of KindCentralRenew: request Seq, holding
// Fence, asks for LeaseMS more, counted from this frame's Stamp.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Name Len    |                 Reserved (0)                  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Incarnation of the member                     |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Seq: the request                              |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Fence of the grant                            | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Stamp: this frame's stamp                     | 24
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Lease, ms                                     | 28
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        | 32
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type CentralRenew struct {
	Name        string
	Incarnation uint32
	Seq         uint64
	Fence       uint64
	Stamp       uint32
	LeaseMS     uint32
}

// CentralRefuseReason says why the coordinator refused.
type CentralRefuseReason uint8

const (
	// RefuseQueueFull: the coordinator's queue (or the member's share of
	// it, or its lock table) is full.
	RefuseQueueFull CentralRefuseReason = 1
	// RefuseNotHeld: a renewal of a grant the coordinator does not know
	// (its lease ended, or it was never made).
	RefuseNotHeld CentralRefuseReason = 2
	// RefuseBadRequest: a lease or mode the cluster does not allow.
	RefuseBadRequest CentralRefuseReason = 3

	centralRefuseEnd CentralRefuseReason = 4
)

func (r CentralRefuseReason) String() string {
	switch r {
	case RefuseQueueFull:
		return "queue_full"
	case RefuseNotHeld:
		return "not_held"
	case RefuseBadRequest:
		return "bad_request"
	}
	return "reason(" + itoa(int(r)) + ")"
}

// CentralRefuse is the payload of KindCentralRefuse.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Name Len    |    Reason     |         Reserved (0)          |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Incarnation of the member                     |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Seq: the request                              |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        | 16
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type CentralRefuse struct {
	Name        string
	Reason      CentralRefuseReason
	Incarnation uint32
	Seq         uint64
}

// CentralBeat is the payload of KindCentralBeat.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Beat: counts the coordinator's beats          |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|Q|   Hold, ms: how long before the coordinator may grant       |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Q (Quiet): the coordinator's own clients hold no lease, and it grants
// them none, nor renews one, before a majority answered a beat without Q.
// A member remembers when it last answered a beat without Q, so that a
// successor can tell that a dead coordinator's own clients hold nothing
// without waiting out a lease (CentralSyncPrevQuiet). Builds before
// 2026-12-07 never set Q (so their beats never say their clients are
// quiet) and read it as part of Hold (shown in status only).
type CentralBeat struct {
	Beat   uint32
	HoldMS uint32 // below 2^31
	Quiet  bool
}

// centralBeatQuiet is the Q bit of a beat's second word.
const centralBeatQuiet = 1 << 31

// CentralSyncRestarted flags a sync from a member that started less than
// a lease ago: a previous run of it may have held leases it cannot
// re-announce.
const CentralSyncRestarted uint8 = 1 << 0

// CentralSyncPrevQuiet flags a sync from a member whose last answered beat
// before this term was the coordinator ranked Prev's (Prev: its index among
// the sorted member IDs), and which answered no beat without Q (of any
// coordinator) for a Hold before sending the sync: as far as this member
// knows, that coordinator's own clients hold no lease. Without the flag,
// Prev is 0.
const CentralSyncPrevQuiet uint8 = 1 << 1

// MaxSyncEntries is the most requests one sync carries (a member keeps at
// most that many waiting and held; a full sync still fits a frame).
const MaxSyncEntries = 512

// CentralSync is the payload of KindCentralSync: every request the member
// has, waiting or held, up to MaxSeq (the last request it made in the
// incarnation): a request of the member at or below MaxSeq that is not
// listed is gone.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Flags     |     Prev      |         Entry Count           |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Incarnation of the member                     |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Stamp: this frame's stamp                     |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Echo: the beat this answers (0: none)         | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 MaxSeq: the member's last request             | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Support age, ms                               | 24
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Entries (Entry Count of them)                 | 28
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Support age: how long before sending this sync the member last answered
// a beat of a coordinator (or coordinated, or started), rounded down: a new
// coordinator counts the older coordinators' leases from there.
//
// Flags: bit 0 CentralSyncRestarted, bit 1 CentralSyncPrevQuiet (with
// Prev: the rank of the coordinator it is about; Prev is 0 without it);
// other bits reserved, zero. An entry:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Name Len    |     Mode      |  Held (0/1)   | Reserved (0)  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Lease, ms                                     |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Left, ms: of a held lease (0 if waiting)      |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Seq                                           | 12
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Fence (held: its grant's; waiting: 0)         | 20
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        | 28
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type CentralSync struct {
	Flags uint8
	// Prev: with CentralSyncPrevQuiet, the rank among the sorted member
	// IDs of the coordinator whose beat the member last answered before
	// this term; 0 otherwise.
	Prev        uint8
	Incarnation uint32
	Stamp       uint32
	Echo        uint32
	MaxSeq      uint64
	// SupportAgeMS: how long ago the member last supported a coordinator
	// (answered its beat, coordinated itself, or started), rounded down.
	SupportAgeMS uint32
	Entries      []CentralSyncEntry
}

// CentralSyncEntry is one request of a CentralSync. A held entry has a
// non-zero Fence; a waiting one Fence 0 and LeftMS 0. Seq is in 1..MaxSeq.
type CentralSyncEntry struct {
	Name    string
	Mode    CentralMode
	Held    bool
	LeaseMS uint32
	LeftMS  uint32
	Seq     uint64
	Fence   uint64
}

const (
	centralRequestFixedLen = 24
	centralGrantFixedLen   = 32
	centralReleaseFixedLen = 24
	centralRenewFixedLen   = 32
	centralRefuseFixedLen  = 16
	centralBeatLen         = 8
	centralSyncFixedLen    = 28
	centralEntryFixedLen   = 28

	centralSyncFlagsKnown = CentralSyncRestarted | CentralSyncPrevQuiet

	centralRequestWhat = "central request"
	centralGrantWhat   = "central grant"
	centralReleaseWhat = "central release"
	centralRenewWhat   = "central renew"
	centralRefuseWhat  = "central refuse"
	centralBeatWhat    = "central beat"
	centralSyncWhat    = "central sync"
)

// checkMode refuses an undefined mode on encode.
func checkMode(what string, m CentralMode) error {
	if m >= centralModeEnd {
		return &EncodeError{What: what, Field: "mode", Value: uint64(m), Why: "undefined"}
	}
	return nil
}

func checkSeq(what string, seq uint64) error {
	if seq == 0 {
		return &EncodeError{What: what, Field: "seq", Value: 0, Why: "requests are numbered from 1"}
	}
	return nil
}

// readHeader checks what every fixed part shares: its length, a valid
// mode at byte 1 if mode, zero reserved bytes from res to 4, and a
// non-zero Seq at 8.
func readHeader(what string, b []byte, fixed int, mode bool, res int) error {
	if len(b) < fixed {
		return decodeErr(what, DecodeTruncated, "", len(b), fixed)
	}
	if mode && CentralMode(b[1]) >= centralModeEnd {
		return decodeErr(what, DecodeBadField, "mode", int(b[1]), -1)
	}
	for i := res; i < 4; i++ {
		if b[i] != 0 {
			return decodeErr(what, DecodeBadReserved, "reserved", int(b[i]), 0)
		}
	}
	if binary.BigEndian.Uint64(b[8:]) == 0 {
		return decodeErr(what, DecodeBadField, "seq", 0, -1)
	}
	return nil
}

// AppendBinary appends the encoding of r to b.
func (r CentralRequest) AppendBinary(b []byte) ([]byte, error) {
	if !ValidLockName(r.Name) {
		return b, nameEncodeErr(centralRequestWhat, r.Name)
	}
	if err := checkMode(centralRequestWhat, r.Mode); err != nil {
		return b, err
	}
	if err := checkSeq(centralRequestWhat, r.Seq); err != nil {
		return b, err
	}
	b = append(b, byte(len(r.Name)), byte(r.Mode), 0, 0)
	b = binary.BigEndian.AppendUint32(b, r.Incarnation)
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	b = binary.BigEndian.AppendUint32(b, r.Stamp)
	b = binary.BigEndian.AppendUint32(b, r.LeaseMS)
	return append(b, r.Name...), nil
}

// UnmarshalBinary decodes a CentralRequest.
func (r *CentralRequest) UnmarshalBinary(b []byte) error {
	if err := readHeader(centralRequestWhat, b, centralRequestFixedLen, true, 2); err != nil {
		return err
	}
	name, err := readName(centralRequestWhat, b[centralRequestFixedLen:], int(b[0]))
	if err != nil {
		return err
	}
	*r = CentralRequest{Name: name, Mode: CentralMode(b[1]),
		Incarnation: binary.BigEndian.Uint32(b[4:]), Seq: binary.BigEndian.Uint64(b[8:]),
		Stamp: binary.BigEndian.Uint32(b[16:]), LeaseMS: binary.BigEndian.Uint32(b[20:])}
	return nil
}

// AppendBinary appends the encoding of g to b.
func (g CentralGrant) AppendBinary(b []byte) ([]byte, error) {
	if !ValidLockName(g.Name) {
		return b, nameEncodeErr(centralGrantWhat, g.Name)
	}
	if err := checkMode(centralGrantWhat, g.Mode); err != nil {
		return b, err
	}
	if err := checkSeq(centralGrantWhat, g.Seq); err != nil {
		return b, err
	}
	if g.Fence == 0 {
		return b, &EncodeError{What: centralGrantWhat, Field: "fence", Value: 0, Why: "a grant has a fence"}
	}
	b = append(b, byte(len(g.Name)), byte(g.Mode), 0, 0)
	b = binary.BigEndian.AppendUint32(b, g.Incarnation)
	b = binary.BigEndian.AppendUint64(b, g.Seq)
	b = binary.BigEndian.AppendUint64(b, g.Fence)
	b = binary.BigEndian.AppendUint32(b, g.Echo)
	b = binary.BigEndian.AppendUint32(b, g.LeaseMS)
	return append(b, g.Name...), nil
}

// UnmarshalBinary decodes a CentralGrant. Its fence is non-zero.
func (g *CentralGrant) UnmarshalBinary(b []byte) error {
	if err := readHeader(centralGrantWhat, b, centralGrantFixedLen, true, 2); err != nil {
		return err
	}
	fence := binary.BigEndian.Uint64(b[16:])
	if fence == 0 {
		return decodeErr(centralGrantWhat, DecodeBadField, "fence", 0, -1)
	}
	name, err := readName(centralGrantWhat, b[centralGrantFixedLen:], int(b[0]))
	if err != nil {
		return err
	}
	*g = CentralGrant{Name: name, Mode: CentralMode(b[1]),
		Incarnation: binary.BigEndian.Uint32(b[4:]), Seq: binary.BigEndian.Uint64(b[8:]), Fence: fence,
		Echo: binary.BigEndian.Uint32(b[24:]), LeaseMS: binary.BigEndian.Uint32(b[28:])}
	return nil
}

// AppendBinary appends the encoding of r to b.
func (r CentralRelease) AppendBinary(b []byte) ([]byte, error) {
	if !ValidLockName(r.Name) {
		return b, nameEncodeErr(centralReleaseWhat, r.Name)
	}
	if err := checkSeq(centralReleaseWhat, r.Seq); err != nil {
		return b, err
	}
	b = append(b, byte(len(r.Name)), 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, r.Incarnation)
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	b = binary.BigEndian.AppendUint64(b, r.Fence)
	return append(b, r.Name...), nil
}

// UnmarshalBinary decodes a CentralRelease.
func (r *CentralRelease) UnmarshalBinary(b []byte) error {
	if err := readHeader(centralReleaseWhat, b, centralReleaseFixedLen, false, 1); err != nil {
		return err
	}
	name, err := readName(centralReleaseWhat, b[centralReleaseFixedLen:], int(b[0]))
	if err != nil {
		return err
	}
	*r = CentralRelease{Name: name, Incarnation: binary.BigEndian.Uint32(b[4:]),
		Seq: binary.BigEndian.Uint64(b[8:]), Fence: binary.BigEndian.Uint64(b[16:])}
	return nil
}

// AppendBinary appends the encoding of r to b.
func (r CentralRenew) AppendBinary(b []byte) ([]byte, error) {
	if !ValidLockName(r.Name) {
		return b, nameEncodeErr(centralRenewWhat, r.Name)
	}
	if err := checkSeq(centralRenewWhat, r.Seq); err != nil {
		return b, err
	}
	if r.Fence == 0 {
		return b, &EncodeError{What: centralRenewWhat, Field: "fence", Value: 0, Why: "only a grant is renewed"}
	}
	b = append(b, byte(len(r.Name)), 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, r.Incarnation)
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	b = binary.BigEndian.AppendUint64(b, r.Fence)
	b = binary.BigEndian.AppendUint32(b, r.Stamp)
	b = binary.BigEndian.AppendUint32(b, r.LeaseMS)
	return append(b, r.Name...), nil
}

// UnmarshalBinary decodes a CentralRenew. Its fence is non-zero.
func (r *CentralRenew) UnmarshalBinary(b []byte) error {
	if err := readHeader(centralRenewWhat, b, centralRenewFixedLen, false, 1); err != nil {
		return err
	}
	fence := binary.BigEndian.Uint64(b[16:])
	if fence == 0 {
		return decodeErr(centralRenewWhat, DecodeBadField, "fence", 0, -1)
	}
	name, err := readName(centralRenewWhat, b[centralRenewFixedLen:], int(b[0]))
	if err != nil {
		return err
	}
	*r = CentralRenew{Name: name, Incarnation: binary.BigEndian.Uint32(b[4:]), Seq: binary.BigEndian.Uint64(b[8:]),
		Fence: fence, Stamp: binary.BigEndian.Uint32(b[24:]), LeaseMS: binary.BigEndian.Uint32(b[28:])}
	return nil
}

// AppendBinary appends the encoding of r to b.
func (r CentralRefuse) AppendBinary(b []byte) ([]byte, error) {
	if !ValidLockName(r.Name) {
		return b, nameEncodeErr(centralRefuseWhat, r.Name)
	}
	if r.Reason == 0 || r.Reason >= centralRefuseEnd {
		return b, &EncodeError{What: centralRefuseWhat, Field: "reason", Value: uint64(r.Reason), Why: "undefined"}
	}
	if err := checkSeq(centralRefuseWhat, r.Seq); err != nil {
		return b, err
	}
	b = append(b, byte(len(r.Name)), byte(r.Reason), 0, 0)
	b = binary.BigEndian.AppendUint32(b, r.Incarnation)
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	return append(b, r.Name...), nil
}

// UnmarshalBinary decodes a CentralRefuse.
func (r *CentralRefuse) UnmarshalBinary(b []byte) error {
	if err := readHeader(centralRefuseWhat, b, centralRefuseFixedLen, false, 2); err != nil {
		return err
	}
	reason := CentralRefuseReason(b[1])
	if reason == 0 || reason >= centralRefuseEnd {
		return decodeErr(centralRefuseWhat, DecodeBadField, "reason", int(reason), -1)
	}
	name, err := readName(centralRefuseWhat, b[centralRefuseFixedLen:], int(b[0]))
	if err != nil {
		return err
	}
	*r = CentralRefuse{Name: name, Reason: reason, Incarnation: binary.BigEndian.Uint32(b[4:]), Seq: binary.BigEndian.Uint64(b[8:])}
	return nil
}

// AppendBinary appends the encoding of c to b.
func (c CentralBeat) AppendBinary(b []byte) ([]byte, error) {
	if c.HoldMS >= centralBeatQuiet {
		return b, &EncodeError{What: centralBeatWhat, Field: "hold", Value: uint64(c.HoldMS), Why: "at or above 2^31 ms"}
	}
	w := c.HoldMS
	if c.Quiet {
		w |= centralBeatQuiet
	}
	b = binary.BigEndian.AppendUint32(b, c.Beat)
	return binary.BigEndian.AppendUint32(b, w), nil
}

// UnmarshalBinary decodes a CentralBeat.
func (c *CentralBeat) UnmarshalBinary(b []byte) error {
	if len(b) != centralBeatLen {
		k := DecodeTruncated
		if len(b) > centralBeatLen {
			k = DecodeBadLength
		}
		return decodeErr(centralBeatWhat, k, "", len(b), centralBeatLen)
	}
	w := binary.BigEndian.Uint32(b[4:])
	*c = CentralBeat{Beat: binary.BigEndian.Uint32(b), HoldMS: w &^ centralBeatQuiet, Quiet: w&centralBeatQuiet != 0}
	return nil
}

// AppendBinary appends the encoding of s to b. It fails on a field the
// decoder would refuse: a caller's bug.
func (s CentralSync) AppendBinary(b []byte) ([]byte, error) {
	if s.Flags&^centralSyncFlagsKnown != 0 {
		return b, &EncodeError{What: centralSyncWhat, Field: "flags", Value: uint64(s.Flags), Why: "undefined"}
	}
	if s.Flags&CentralSyncPrevQuiet == 0 && s.Prev != 0 {
		return b, &EncodeError{What: centralSyncWhat, Field: "prev", Value: uint64(s.Prev), Why: "set without CentralSyncPrevQuiet"}
	}
	if len(s.Entries) > MaxSyncEntries {
		return b, &EncodeError{What: centralSyncWhat, Field: "entry count", Value: uint64(len(s.Entries)), Why: "exceeds MaxSyncEntries"}
	}
	for _, e := range s.Entries {
		if err := e.check(s.MaxSeq); err != nil {
			return b, &EncodeError{What: centralSyncWhat, Field: err.Field, Value: err.Value, Why: err.Why}
		}
	}
	b = append(b, s.Flags, s.Prev)
	b = binary.BigEndian.AppendUint16(b, uint16(len(s.Entries)))
	b = binary.BigEndian.AppendUint32(b, s.Incarnation)
	b = binary.BigEndian.AppendUint32(b, s.Stamp)
	b = binary.BigEndian.AppendUint32(b, s.Echo)
	b = binary.BigEndian.AppendUint64(b, s.MaxSeq)
	b = binary.BigEndian.AppendUint32(b, s.SupportAgeMS)
	for _, e := range s.Entries {
		held := byte(0)
		if e.Held {
			held = 1
		}
		b = append(b, byte(len(e.Name)), byte(e.Mode), held, 0)
		b = binary.BigEndian.AppendUint32(b, e.LeaseMS)
		b = binary.BigEndian.AppendUint32(b, e.LeftMS)
		b = binary.BigEndian.AppendUint64(b, e.Seq)
		b = binary.BigEndian.AppendUint64(b, e.Fence)
		b = append(b, e.Name...)
	}
	return b, nil
}

// check is what the decoder refuses in an entry.
func (e CentralSyncEntry) check(maxSeq uint64) *EncodeError {
	switch {
	case !ValidLockName(e.Name):
		return &EncodeError{Field: "entry name", Value: uint64(len(e.Name)), Why: "not a valid lock name"}
	case e.Mode >= centralModeEnd:
		return &EncodeError{Field: "entry mode", Value: uint64(e.Mode), Why: "undefined"}
	case e.Seq == 0 || e.Seq > maxSeq:
		return &EncodeError{Field: "entry seq", Value: e.Seq, Why: "outside 1..MaxSeq"}
	case e.Held != (e.Fence != 0):
		return &EncodeError{Field: "entry fence", Value: e.Fence, Why: "a held entry has a fence, a waiting one none"}
	case !e.Held && e.LeftMS != 0:
		return &EncodeError{Field: "entry left", Value: uint64(e.LeftMS), Why: "a waiting entry has no lease left"}
	}
	return nil
}

// UnmarshalBinary decodes a CentralSync: at most MaxSyncEntries entries,
// each consistent (see CentralSyncEntry).
func (s *CentralSync) UnmarshalBinary(b []byte) error {
	if len(b) < centralSyncFixedLen {
		return decodeErr(centralSyncWhat, DecodeTruncated, "", len(b), centralSyncFixedLen)
	}
	if b[0]&^centralSyncFlagsKnown != 0 {
		return decodeErr(centralSyncWhat, DecodeBadFlags, "flags", int(b[0]), -1)
	}
	if b[0]&CentralSyncPrevQuiet == 0 && b[1] != 0 {
		return decodeErr(centralSyncWhat, DecodeBadReserved, "prev", int(b[1]), 0)
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if n > MaxSyncEntries {
		return decodeErr(centralSyncWhat, DecodeOversized, "entry count", n, MaxSyncEntries)
	}
	// Each entry takes at least its fixed part and a 1-byte name: a count
	// the input cannot hold is refused before anything is allocated.
	if min := centralSyncFixedLen + n*(centralEntryFixedLen+1); len(b) < min {
		return decodeErr(centralSyncWhat, DecodeTruncated, "entries", len(b), min)
	}
	out := CentralSync{Flags: b[0], Prev: b[1], Incarnation: binary.BigEndian.Uint32(b[4:]), Stamp: binary.BigEndian.Uint32(b[8:]),
		Echo: binary.BigEndian.Uint32(b[12:]), MaxSeq: binary.BigEndian.Uint64(b[16:]), SupportAgeMS: binary.BigEndian.Uint32(b[24:])}
	if n > 0 {
		out.Entries = make([]CentralSyncEntry, 0, n)
	}
	rest := b[centralSyncFixedLen:]
	for range n {
		if len(rest) < centralEntryFixedLen {
			return decodeErr(centralSyncWhat, DecodeTruncated, "entry", len(rest), centralEntryFixedLen)
		}
		if rest[2] > 1 {
			return decodeErr(centralSyncWhat, DecodeBadField, "entry held", int(rest[2]), -1)
		}
		if rest[3] != 0 {
			return decodeErr(centralSyncWhat, DecodeBadReserved, "entry reserved", int(rest[3]), 0)
		}
		nl := int(rest[0])
		if nl == 0 || nl > MaxLockNameLen || len(rest) < centralEntryFixedLen+nl {
			return decodeErr(centralSyncWhat, DecodeBadField, "entry name length", nl, -1)
		}
		name, err := readName(centralSyncWhat, rest[centralEntryFixedLen:centralEntryFixedLen+nl], nl)
		if err != nil {
			return err
		}
		e := CentralSyncEntry{Name: name, Mode: CentralMode(rest[1]), Held: rest[2] == 1,
			LeaseMS: binary.BigEndian.Uint32(rest[4:]), LeftMS: binary.BigEndian.Uint32(rest[8:]),
			Seq: binary.BigEndian.Uint64(rest[12:]), Fence: binary.BigEndian.Uint64(rest[20:])}
		if bad := e.check(out.MaxSeq); bad != nil {
			return decodeErr(centralSyncWhat, DecodeBadField, bad.Field, clampInt(bad.Value), -1)
		}
		out.Entries = append(out.Entries, e)
		rest = rest[centralEntryFixedLen+nl:]
	}
	if len(rest) != 0 {
		return decodeErr(centralSyncWhat, DecodeBadLength, "trailing bytes", len(rest), 0)
	}
	*s = out
	return nil
}
