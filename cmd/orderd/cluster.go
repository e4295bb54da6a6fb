package main

import (
	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/order"
	"github.com/synclab/synclab/pkg/wire"
)

// clusterFacts is orderd's part of its row in `status --cluster`: its
// role in the total order (sequencer, recovering, member; "" without a
// sequencer), the sequencer it knows, how far the order is committed and
// delivered here.
func clusterFacts(c core.Core) (string, []wire.StatusFact) {
	oc, ok := c.(*order.Core)
	if !ok {
		return "", nil
	}
	st := oc.Report()
	facts := []wire.StatusFact{{Tag: wire.FactDelivered, Value: st.Delivered["total_index"]}}
	role := ""
	if s := st.Sequencer; s != nil {
		role = s.Role
		facts = append(facts,
			wire.StatusFact{Tag: wire.FactTerm, Value: s.Term},
			wire.StatusFact{Tag: wire.FactSequencer, Value: uint64(s.Sequencer)},
			wire.StatusFact{Tag: wire.FactCommitted, Value: s.Commit})
	}
	return role, facts
}

// clusterView is orderd's columns of `status --cluster`.
var clusterView = &app.ClusterView{
	Headers: []string{"Order", "Role", "Sequencer", "Committed", "Delivered"},
	Cells: func(r daemon.ClusterRow) []string {
		role, seq, committed := r.Role, r.Facts["sequencer"].String(), r.Facts["committed"].String()
		switch {
		case r.SteppedBack:
			role = "stepped back"
		case role == "":
			role = "-"
		}
		if seq == "" {
			seq = "-"
		} else if seq == "0" {
			seq = "none"
		}
		if committed == "" {
			committed = "-"
		}
		return []string{r.Algorithm, role, seq, committed, r.Facts["delivered"].String()}
	},
}
