package timedcore

import (
	"strings"
	"testing"

	"github.com/synclab/synclab/pkg/timesync/berkeley"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/timesync/server"
)

// TestSync: one state, one bound, whatever part keeps the time. No bound
// is ever given where there is none ("±0s"), and a source that is this
// host is named as such.
func TestSync(t *testing.T) {
	silent := client.SourceStatus{Address: "10.0.0.1:123", Verdict: "no_estimate"}
	self := client.SourceStatus{Address: "10.0.0.1:123", Verdict: client.VerdictSelf, Why: "10.0.0.1 is this machine's address"}
	for _, tc := range []struct {
		name  string
		st    Status
		state string
		sync  bool
		bound int64 // -1: none
		never bool
		why   string
	}{
		{"no answer yet", Status{Client: client.Status{Selection: "not run yet", Sources: []client.SourceStatus{silent}}},
			StateUnsynchronised, false, -1, false, "no answer yet from 10.0.0.1:123"},
		{"synchronised", Status{Client: client.Status{Synchronized: true, SysPeer: "10.0.0.1:123", Stratum: 9, ErrorBoundNS: 688770, Updates: 3,
			Sources: []client.SourceStatus{{Address: "10.0.0.1:123", Stratum: 8, Received: 9, Verdict: "sys_peer"}}}},
			StateSynchronised, true, 688770, false, ""},
		{"lost for too long", Status{Client: client.Status{Updates: 40, Selection: "no majority", Sources: []client.SourceStatus{{Address: "10.0.0.1:123", Received: 9, Verdict: "unreachable"}}}},
			StateUnsynchronised, false, -1, false, "grew past 16 s"},
		{"a client serving locally meanwhile", Status{Client: client.Status{LocalReference: true, Stratum: 8, Selection: "not run yet", Sources: []client.SourceStatus{silent}}},
			StateUnsynchronised, false, -1, false, "meanwhile this host serves its own clock at local stratum 8"},
		{"the master, listing itself", Status{Client: client.Status{LocalReference: true, Stratum: 8, Sources: []client.SourceStatus{self}}},
			StateLocalReference, true, -1, false, "10.0.0.1:123 is this host, and no other source is configured"},
		{"only itself to follow", Status{Client: client.Status{Stratum: 16, Sources: []client.SourceStatus{self}}},
			StateUnsynchronised, false, -1, true, "nothing to follow: 10.0.0.1:123 is this host"},
		{"measuring", Status{Client: client.Status{MeasureOnly: true, Sources: []client.SourceStatus{silent}}},
			StateMeasuring, false, -1, true, "--no-adjust"},
		{"berkeley, not yet", Status{Cluster: berkeley.Status{Master: 3}}, StateUnsynchronised, false, -1, false, "no Berkeley correction applied yet (master 3)"},
		{"berkeley", Status{Cluster: berkeley.Status{Master: 3, Synchronized: true, ErrorBoundNS: 42000}}, StateSynchronised, true, 42000, false, ""},
		{"the master serving", Status{Server: &server.Status{LocalStratum: 8}}, StateLocalReference, true, -1, false, "no source is configured"},
		{"serving unsynchronised", Status{Server: &server.Status{}}, StateUnsynchronised, false, -1, true, "stratum 16"},
		{"nothing", Status{}, StateUnsynchronised, false, -1, true, "keeps no time"},
	} {
		s := SyncOf(tc.st)
		if tc.state == StateSynchronised && tc.st.Client != nil && s.Source != "10.0.0.1:123 (stratum 8)" {
			t.Errorf("%s: source %q, want the system peer and its stratum", tc.name, s.Source)
		}
		bound := int64(-1)
		if s.ErrorBoundNS != nil {
			bound = *s.ErrorBoundNS
		}
		if s.State != tc.state || s.Synchronized != tc.sync || bound != tc.bound || s.Never != tc.never || !strings.Contains(s.Why, tc.why) {
			t.Errorf("%s: %+v (bound %d)", tc.name, s, bound)
		}
	}
}
