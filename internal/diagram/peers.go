package diagram

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/synclab/synclab/internal/trace"
)

// peerFiles draws the NTP hosts outside the traces: for every NTP packet a
// traced daemon received from a peer that left no trace of its own (a
// chronyd, a public server, an ntpdig), the packet itself says when the
// peer received the packet it answers (its receive timestamp, t2) and
// when it sent this one (its transmit timestamp, t3), both on the peer's
// clock. So one client's trace is enough to draw its server's line, the
// four timestamps of each exchange where the notes draw them. A request
// the peer sent (a client's, to a traced server) gives the peer's send at
// its transmit time. Each peer is one process per cluster, ID 0, named by
// its address, its events in the order of its own clock.
func peerFiles(files []*trace.File) []*trace.File {
	type key struct{ cluster, frame string }
	sent, received := map[key]bool{}, map[key]bool{}
	for _, f := range files {
		ck := clusterKey(f.Header.Daemon, f.Header.Cluster)
		for _, e := range f.Events {
			switch e.Ev {
			case trace.EvSend:
				sent[key{ck, e.Frame}] = true
			case trace.EvRecv:
				received[key{ck, e.Frame}] = true
			}
		}
	}
	type peer struct {
		file   *trace.File
		events []trace.Event
	}
	peers := map[string]*peer{}
	var order []string
	add := func(f *trace.File, addr string, e trace.Event) {
		ck := clusterKey(f.Header.Daemon, f.Header.Cluster)
		p := peers[ck+addr]
		if p == nil {
			p = &peer{file: &trace.File{Name: "ntp peer " + addr, Header: trace.Header{
				Version: trace.Version, Daemon: f.Header.Daemon, Cluster: f.Header.Cluster, Host: "ntp " + addr, Clock: "peer"}}}
			peers[ck+addr] = p
			order = append(order, ck+addr)
		}
		p.events = append(p.events, e)
	}
	for _, f := range files {
		ck := clusterKey(f.Header.Daemon, f.Header.Cluster)
		for _, e := range f.Events {
			if e.Peer == "" || e.Ev != trace.EvRecv || !strings.HasPrefix(e.Kind, "ntp_") || e.Frame == "" {
				continue
			}
			xmt, ok := fieldTime(e.Fields, "transmit")
			if !ok || sent[key{ck, e.Frame}] {
				continue // the peer traced itself, or the packet is unreadable
			}
			sent[key{ck, e.Frame}] = true
			origin, _ := e.Fields["origin_frame"].(string)
			if rec, ok := fieldTime(e.Fields, "receive"); ok && origin != "" && sent[key{ck, origin}] && !received[key{ck, origin}] {
				// The peer received our packet (t2) before it answered (t3).
				received[key{ck, origin}] = true
				add(f, e.Peer, trace.Event{T: rec, Ev: trace.EvRecv, Kind: requestKind(e.Kind), Frame: origin})
			}
			add(f, e.Peer, trace.Event{T: xmt, Ev: trace.EvSend, Kind: e.Kind, Frame: e.Frame, From: 0, To: f.Header.ID, Fields: e.Fields})
		}
	}
	out := make([]*trace.File, 0, len(order))
	for _, k := range order {
		p := peers[k]
		// The peer's events in its own clock's order; its receive of a
		// request before its answer when they carry one time.
		slices.SortStableFunc(p.events, func(a, b trace.Event) int {
			return cmp.Or(a.T.Compare(b.T), cmp.Compare(evRank(a.Ev), evRank(b.Ev)))
		})
		p.file.Events = p.events
		p.file.Header.Started = p.events[0].T
		out = append(out, p.file)
	}
	return out
}

func evRank(ev string) int {
	if ev == trace.EvRecv {
		return 0
	}
	return 1
}

// requestKind is the kind of the packet a reply of kind answers.
func requestKind(reply string) string {
	switch reply {
	case "ntp_server":
		return "ntp_client"
	case "ntp_symmetric_passive":
		return "ntp_symmetric_active"
	}
	return reply
}

// fieldTime reads an RFC 3339 time of a trace's fields ("0": none).
func fieldTime(fields map[string]any, name string) (time.Time, bool) {
	s, _ := fields[name].(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil && !t.IsZero()
}
