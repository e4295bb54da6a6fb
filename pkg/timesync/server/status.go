package server

import (
	"encoding/binary"
	"maps"
	"net/netip"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// Status is the server's view for `timed status`. Counters count since
// start.
type Status struct {
	// Requests counts well-formed mode-3 requests (answered, kissed or
	// rate-limited).
	Requests uint64 `json:"requests"`
	// Replies counts mode-4 replies carrying time; Authenticated those
	// of them signed with a client's key.
	Replies       uint64 `json:"replies"`
	Authenticated uint64 `json:"authenticated"`
	// KoDRate counts RATE kiss-o'-death replies.
	KoDRate uint64 `json:"kod_rate"`
	// CryptoNAK counts crypto-NAK replies by reason ("unknown_key",
	// "bad_mac").
	CryptoNAK map[string]uint64 `json:"crypto_nak"`
	// CristianRequests counts authenticated, well-formed Cristian time
	// requests; CristianReplies those answered.
	CristianRequests uint64 `json:"cristian_requests"`
	CristianReplies  uint64 `json:"cristian_replies"`
	// ExtensionsIgnored counts requests answered without their NTPv4
	// extension fields.
	ExtensionsIgnored uint64 `json:"extensions_ignored"`
	// Dropped counts packets without an answer by reason: "short",
	// "bad_length", "bad_version", "bad_source", "rate_limited",
	// "mode_control", "mode_private", "mode_server", ...
	Dropped map[string]uint64 `json:"dropped"`
	// RateLimit is the limiter's configuration and table; nil when off.
	RateLimit *RateLimitStatus `json:"rate_limit,omitempty"`
	// Keys is the number of symmetric keys loaded.
	Keys int `json:"keys"`
	// LocalStratum is Config.LocalStratum (0: none); LocalErrorNS is
	// Config.LocalError, advertised in the root dispersion at it.
	LocalStratum uint8 `json:"local_stratum"`
	LocalErrorNS int64 `json:"local_error_ns,omitempty"`
	// Unsynchronised says why a server with a local stratum serves its
	// time unsynchronised (a group's time nothing bounds: Config.Group).
	Unsynchronised string `json:"unsynchronised,omitempty"`
	// System is what a reply sent at the last tick advertised.
	System SystemStatus `json:"system"`
	// Broadcast describes the mode-5 packets sent; nil when none are.
	Broadcast *BroadcastStatus `json:"broadcast,omitempty"`
	// Interleaved is chrony's interleaved mode, for the clients that ask.
	Interleaved InterleavedStatus `json:"interleaved"`
}

// InterleavedStatus counts the server's interleaved mode: answers that
// carried the kernel's transmit stamp of the client's previous answer,
// stamps kept (Kept now, of Capacity; Saved in all), kept stamps dropped
// for newer ones before their client asked (Evicted: more clients in the
// mode than Capacity, or a flood of forged ones), requests in the form
// whose stamp was not kept (Unknown: a client's first ones, a stamp
// evicted or given out already, another address, a forgery). An answer
// whose stamp the kernel did not give is counted by the daemon
// (errors answer_tx_stamp_missed).
type InterleavedStatus struct {
	Answers  uint64 `json:"answers"`
	Saved    uint64 `json:"saved"`
	Kept     int    `json:"kept"`
	Capacity int    `json:"capacity"`
	Evicted  uint64 `json:"evicted"`
	Unknown  uint64 `json:"unknown"`
}

// RateLimitStatus describes the rate limiter.
type RateLimitStatus struct {
	IntervalMS     int64  `json:"interval_ms"`
	Burst          int    `json:"burst"`
	KissIntervalMS int64  `json:"kiss_interval_ms"`
	Clients        int    `json:"clients"` // entries in the table now
	MaxClients     int    `json:"max_clients"`
	Evicted        uint64 `json:"evicted"` // entries pushed out by newer clients at a full table
}

// SystemStatus is the advertised system state, for humans and scripts.
type SystemStatus struct {
	Leap             uint8     `json:"leap"`
	Synchronized     bool      `json:"synchronized"` // leap != 3
	Stratum          uint8     `json:"stratum"`
	RefID            string    `json:"refid"` // text or dotted quad, see RefIDString
	Reference        time.Time `json:"reference_time,omitzero"`
	RootDelayNs      int64     `json:"root_delay_ns"`
	RootDispersionNs int64     `json:"root_dispersion_ns"`
	Precision        int8      `json:"precision"`
}

// Status implements core.Core.
func (s *Server) Status() any { return s.Report() }

// Report returns the server's status.
func (s *Server) Report() Status {
	st := Status{
		Requests:          s.requests,
		Replies:           s.replies,
		Authenticated:     s.authReplies,
		KoDRate:           s.kodRate,
		CryptoNAK:         maps.Clone(s.cryptoNAK),
		ExtensionsIgnored: s.extIgnored,
		CristianRequests:  s.cristianRequests,
		CristianReplies:   s.cristianReplies,
		Dropped:           maps.Clone(s.dropped),
		Keys:              len(s.cfg.Keys),
		LocalStratum:      s.cfg.LocalStratum,
		LocalErrorNS:      int64(s.cfg.LocalError),
		Unsynchronised:    s.LocalWhy(),
		System:            systemStatus(s.System(s.now)),
		Broadcast:         s.broadcastStatus(),
		Interleaved: InterleavedStatus{Answers: s.xl.answers, Saved: s.xl.saved, Kept: len(s.xl.index), Capacity: InterleavedStamps,
			Evicted: s.xl.evicted, Unknown: s.xl.unknown},
	}
	if s.lim != nil {
		r := s.cfg.RateLimit
		st.RateLimit = &RateLimitStatus{
			IntervalMS:     r.Interval.Milliseconds(),
			Burst:          r.Burst,
			KissIntervalMS: r.KissInterval.Milliseconds(),
			Clients:        len(s.lim.table),
			MaxClients:     r.MaxClients,
			Evicted:        s.lim.evicted,
		}
	}
	return st
}

func systemStatus(sys SystemState) SystemStatus {
	return SystemStatus{
		Leap:             sys.Leap,
		Synchronized:     sys.Leap != wire.LeapNotInSync,
		Stratum:          sys.Stratum,
		RefID:            RefIDString(sys.Stratum, sys.ReferenceID),
		Reference:        sys.Reference,
		RootDelayNs:      sys.RootDelay.Nanoseconds(),
		RootDispersionNs: sys.RootDispersion.Nanoseconds(),
		Precision:        sys.Precision,
	}
}

// RefIDString formats a reference ID as NTP tools show it: as text for
// stratum 0 (a kiss code), 1 (a reference clock: "GPS", "PPS") and 16
// ("INIT"), and for any stratum when it reads as an upper-case code
// ("LOCL" at a local stratum: no IPv4 address a lab uses starts with a
// byte in 'A'..'Z'); otherwise as the upstream's dotted IPv4 address (or,
// for an IPv6 upstream, the hash, which reads the same way).
func RefIDString(stratum uint8, id uint32) string {
	text := wire.RefIDText(id)
	if text != "" && (stratum <= 1 || stratum >= wire.StratumUnsynchronized || (text[0] >= 'A' && text[0] <= 'Z')) {
		return text
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], id)
	return netip.AddrFrom4(b).String()
}
