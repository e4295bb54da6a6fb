package core

import (
	"encoding"
	"errors"
	"fmt"
)

// EventBug is the name of the event a core reports for a bug of its own
// that it survived (an encoding of its own message that failed): the
// daemon logs and counts it like any event, so it shows in status and
// metrics instead of killing the daemon.
const EventBug = "core_bug"

// Bugs counts a core's own bugs by label and reports each in the core's
// events (the slice a core collects its Ready's events in) as an EventBug
// event. The zero value is ready to use.
type Bugs struct {
	counts map[string]uint64
}

// Encode appends v's encoding to buf (a core encoding its own payload or
// packet). Every field is the core's own, so an error is a bug in the
// core: it is counted under "encode_"+what, reported in events as an
// EventBug event, and Encode returns ok false: the core drops that message
// and carries on.
func (b *Bugs) Encode(events *[]Event, what string, v encoding.BinaryAppender, buf []byte) (out []byte, ok bool) {
	out, err := v.AppendBinary(buf)
	if err != nil {
		b.Report(events, "encode_"+what, fmt.Errorf("encoding our own %s: %w", what, err))
		return nil, false
	}
	return out, true
}

// Report counts a bug under label and reports it in events.
func (b *Bugs) Report(events *[]Event, label string, err error) {
	if b.counts == nil {
		b.counts = map[string]uint64{}
	}
	b.counts[label]++
	*events = append(*events, Event{Name: EventBug, Msg: err.Error(), Args: []any{"bug", label}})
}

// Counts returns the bugs counted so far by label (nil: none); the caller
// must not modify it.
func (b *Bugs) Counts() map[string]uint64 { return b.counts }

// ErrorLabel is one entry of an ErrorLabels table: errors that wrap Err
// are counted under Label.
type ErrorLabel struct {
	Err   error
	Label string
}

// ErrorLabels maps errors to a bounded set of counter labels: a core counts
// each error Step returns under the label of the first sentinel it wraps,
// so a hostile peer can make counters grow, never their number.
type ErrorLabels []ErrorLabel

// Of returns the label of the first entry whose Err err wraps, else
// fallback.
func (ls ErrorLabels) Of(err error, fallback string) string {
	for _, l := range ls {
		if errors.Is(err, l.Err) {
			return l.Label
		}
	}
	return fallback
}
