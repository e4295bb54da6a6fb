package elect

import (
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// RejectReason names an error an election core's Step refused a frame
// with, for its counters: the label of the first of labels it wraps, else
// a term's ("term_absurd", "term_too_fast", "term_exhausted") or a
// payload's ("payload_truncated", ...). The set of labels is bounded, so a
// hostile peer can make counters grow, never their number.
func RejectReason(labels core.ErrorLabels, err error) string {
	if l := labels.Of(err, ""); l != "" {
		return l
	}
	if r := epoch.Reason(err); r != "" {
		return "term_" + r
	}
	return "payload_" + wire.Reason(err)
}
