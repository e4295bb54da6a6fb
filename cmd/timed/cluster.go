package main

import (
	"strconv"
	"time"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/berkeley"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/timesync/timedcore"
	"github.com/synclab/synclab/pkg/wire"
)

// clusterFacts is timed's part of its row in `status --cluster`: its role
// (Berkeley's master or worker, or the NTP source it follows), the
// master, and its clock's offset from its source and error bound.
func clusterFacts(c core.Core) (string, []wire.StatusFact) {
	tc, ok := c.(*timedcore.Core)
	if !ok {
		return "", nil
	}
	st, _ := tc.Status().(timedcore.Status)
	role := "member"
	var facts []wire.StatusFact
	if bk, ok := st.Cluster.(berkeley.Status); ok {
		role = bk.Role
		facts = append(facts, wire.StatusFact{Tag: wire.FactLeader, Value: uint64(bk.Master)}, wire.StatusFact{Tag: wire.FactTerm, Value: bk.Term})
		if bk.Synchronized {
			facts = append(facts, wire.StatusFact{Tag: wire.FactErrorBound, Value: uint64(max(bk.ErrorBoundNS, 0))})
		}
	}
	if cl, ok := st.Client.(client.Status); ok {
		role = "client"
		if cl.SysPeer != "" {
			role = "follows " + cl.SysPeer
		}
		if cl.Synchronized {
			facts = append(facts, wire.StatusFact{Tag: wire.FactOffset, Value: uint64(cl.OffsetNS)},
				wire.StatusFact{Tag: wire.FactErrorBound, Value: uint64(max(cl.ErrorBoundNS, 0))})
		}
	}
	if st.Server != nil {
		role += ", serves NTP"
	}
	return role, facts
}

// clusterView is timed's columns of `status --cluster`.
var clusterView = &app.ClusterView{
	Headers: []string{"Role", "Master", "Source offset", "Error bound"},
	Cells: func(r daemon.ClusterRow) []string {
		master := "-"
		if m := r.Facts["leader"].String(); m != "" && m != "0" {
			master = m
		}
		offset, bound := "-", "unsynchronised"
		if v, err := strconv.ParseInt(r.Facts["offset_ns"].String(), 10, 64); err == nil {
			offset = app.FormatOffset(time.Duration(v))
		}
		if v, err := strconv.ParseInt(r.Facts["error_bound_ns"].String(), 10, 64); err == nil {
			bound = "±" + app.ShortDuration(time.Duration(v))
		}
		return []string{r.Role, master, offset, bound}
	},
}
