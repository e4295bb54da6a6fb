package wire

import "encoding/binary"

// TraceQuery is the payload of KindTraceQuery: a member asks another for
// the next piece of its trace window (the live page, `X web`, draws every
// member's events). Node to node (internal/node); cores never see it. It
// is padded to TraceQueryLen so that no answer (a TraceChunk, at most
// MaxTraceChunkLen) is as much as twice the size of the query that asked
// for it: one query, one chunk, so that even a sender that forges a
// member's address cannot use the pair as an amplifier.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Version (1)  |   Flags (0)   |          Reserved (0)         |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         Query ID (64)                         |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        Window (32): the answerer's window continued; 0 none   | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      After (64): the offset in that window's stream to send   | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   From (64, NTP time): a fresh start's first event's time     | 24
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	~            Padding: zeros, up to TraceQueryLen (512)          ~ 32
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// A window is the answerer's own: its events as trace lines
// (internal/trace's format, without the header), one byte stream whose
// offsets count from the window's start. The asker continues a window it
// knows (Window, After); with Window 0, or one the answerer no longer
// has, the answer starts afresh at the first event held at or after From.
type TraceQuery struct {
	ID     uint64
	Window uint32
	After  uint64
	From   NTPTime
}

// TraceChunk is the payload of KindTraceChunk: the answer to a
// TraceQuery, up to MaxTraceChunkData bytes of the answerer's window.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Version (1)  |     Flags     |         Data Length           |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Query ID (64, the query's)                  |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               Window (32): the window Data is of              | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|             Offset (64): Data's offset in the stream          | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        End (64): the stream's end when the chunk was cut      | 24
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	~                 Data (Data Length bytes, at most              ~ 32
//	~                   MaxTraceChunkData)                          ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Flags: bit 0 TraceSimClock (the answerer's clock is simulated), bit 1
// TraceFresh (Data starts afresh: the window asked for is not held, or
// none was asked for), bit 2 TraceLost (the window's events between After
// and Offset are no longer held: the window dropped them, being full).
// Other bits are reserved and zero. Offset+Data Length is at most End;
// the asker asks again (After = Offset+Data Length) while it is less.
// Data is trace lines cut anywhere (a line may go on in the next chunk);
// the asker reads them as it reads a trace file, which is to say as
// untrusted input.
type TraceChunk struct {
	Flags   uint8
	QueryID uint64
	Window  uint32
	Offset  uint64
	End     uint64
	Data    []byte
}

// Flags of a TraceChunk.
const (
	TraceSimClock   uint8 = 1 << 0
	TraceFresh      uint8 = 1 << 1
	TraceLost       uint8 = 1 << 2
	traceFlagsKnown       = TraceSimClock | TraceFresh | TraceLost
)

const (
	// TraceVersion is the version of TraceQuery and TraceChunk this code
	// writes and reads.
	TraceVersion = 1
	// TraceQueryLen is the exact length of a TraceQuery payload.
	TraceQueryLen = 512
	// MaxTraceChunkData bounds a TraceChunk's data: with its fixed part,
	// less than twice TraceQueryLen.
	MaxTraceChunkData = 960
	// MaxTraceChunkLen is the longest TraceChunk payload.
	MaxTraceChunkLen = traceChunkFixedLen + MaxTraceChunkData

	traceQueryFixedLen = 32
	traceChunkFixedLen = 32
	traceQueryWhat     = "trace query"
	traceChunkWhat     = "trace chunk"
)

// AppendBinary appends the TraceQueryLen bytes of q to b.
func (q TraceQuery) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, TraceVersion, 0, 0, 0)
	b = binary.BigEndian.AppendUint64(b, q.ID)
	b = binary.BigEndian.AppendUint32(b, q.Window)
	b = binary.BigEndian.AppendUint64(b, q.After)
	b = binary.BigEndian.AppendUint64(b, uint64(q.From))
	return append(b, make([]byte, TraceQueryLen-traceQueryFixedLen)...), nil
}

// UnmarshalBinary decodes a whole TraceQuery payload: exactly
// TraceQueryLen bytes, its flags, reserved bytes and padding zero.
func (q *TraceQuery) UnmarshalBinary(b []byte) error {
	if err := checkPadded(traceQueryWhat, b, TraceQueryLen, traceQueryFixedLen, TraceVersion); err != nil {
		return err
	}
	q.ID = binary.BigEndian.Uint64(b[4:])
	q.Window = binary.BigEndian.Uint32(b[12:])
	q.After = binary.BigEndian.Uint64(b[16:])
	q.From = NTPTime(binary.BigEndian.Uint64(b[24:]))
	return nil
}

// AppendBinary appends c to b; it fails on data longer than
// MaxTraceChunkData, unknown flags, or an Offset+len(Data) past End.
func (c TraceChunk) AppendBinary(b []byte) ([]byte, error) {
	if err := c.check(); err != nil {
		return b, err
	}
	b = append(b, TraceVersion, c.Flags)
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.Data)))
	b = binary.BigEndian.AppendUint64(b, c.QueryID)
	b = binary.BigEndian.AppendUint32(b, c.Window)
	b = binary.BigEndian.AppendUint64(b, c.Offset)
	b = binary.BigEndian.AppendUint64(b, c.End)
	return append(b, c.Data...), nil
}

func (c *TraceChunk) check() error {
	switch {
	case len(c.Data) > MaxTraceChunkData:
		return decodeErr(traceChunkWhat, DecodeOversized, "data", len(c.Data), MaxTraceChunkData)
	case c.Flags&^traceFlagsKnown != 0:
		return decodeErr(traceChunkWhat, DecodeBadFlags, "", int(c.Flags), int(traceFlagsKnown))
	case c.Offset > c.End || uint64(len(c.Data)) > c.End-c.Offset:
		return decodeErr(traceChunkWhat, DecodeBadField, "end", -1, -1)
	}
	return nil
}

// UnmarshalBinary decodes a whole TraceChunk payload. Data aliases b.
func (c *TraceChunk) UnmarshalBinary(b []byte) error {
	if len(b) < traceChunkFixedLen {
		return decodeErr(traceChunkWhat, DecodeTruncated, "", len(b), traceChunkFixedLen)
	}
	if b[0] != TraceVersion {
		return decodeErr(traceChunkWhat, DecodeBadVersion, "", int(b[0]), TraceVersion)
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if n > MaxTraceChunkData {
		return decodeErr(traceChunkWhat, DecodeOversized, "data", n, MaxTraceChunkData)
	}
	if len(b) != traceChunkFixedLen+n {
		if len(b) < traceChunkFixedLen+n {
			return decodeErr(traceChunkWhat, DecodeTruncated, "data", len(b), traceChunkFixedLen+n)
		}
		return decodeErr(traceChunkWhat, DecodeBadLength, "", len(b), traceChunkFixedLen+n)
	}
	v := TraceChunk{Flags: b[1], QueryID: binary.BigEndian.Uint64(b[4:]), Window: binary.BigEndian.Uint32(b[12:]),
		Offset: binary.BigEndian.Uint64(b[16:]), End: binary.BigEndian.Uint64(b[24:]), Data: b[traceChunkFixedLen:]}
	if err := v.check(); err != nil {
		return err
	}
	*c = v
	return nil
}
