package core

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// MetricsWriter is implemented by a core that exports metrics of its own
// (offsets, terms, per-source statistics) beside the ones every daemon
// serves. The driver calls Metrics on the goroutine that steps the core,
// like Status, so the core reads its state without locks; the MetricSet
// keeps copies of the values and is rendered later, elsewhere.
//
// Names follow the Prometheus conventions: lower_snake_case with the
// synclab_ prefix and the protocol's name (synclab_ntp_offset_seconds),
// base units (seconds, not nanoseconds), _total on counters and only on
// counters. The driver labels every sample with the daemon's name, so a
// core must not use the label name "daemon".
type MetricsWriter interface {
	Metrics(m *MetricSet)
}

// MetricKind is how a metric's values behave.
type MetricKind uint8

const (
	// MetricGauge goes up and down (an offset, a term, a count of members).
	MetricGauge MetricKind = iota + 1
	// MetricCounter only grows, from zero at the core's start.
	MetricCounter
)

func (k MetricKind) String() string {
	switch k {
	case MetricGauge:
		return "gauge"
	case MetricCounter:
		return "counter"
	}
	return fmt.Sprintf("metric_kind(%d)", uint8(k))
}

// Label is one dimension of a sample: source="10.0.0.1:123".
type Label struct {
	Name, Value string
}

// Sample is one value of a metric.
type Sample struct {
	Labels []Label
	Value  float64
}

// MetricFamily is every sample of one metric name, as the Prometheus text
// format groups them.
type MetricFamily struct {
	Name    string
	Help    string
	Kind    MetricKind
	Samples []Sample
}

// ReservedLabel is the label the driver adds to every sample.
const ReservedLabel = "daemon"

// maxMetricErrors bounds the errors kept: a bad metric emitted once per
// source must not grow the set without end.
const maxMetricErrors = 8

// MetricSet collects a core's metrics. The zero value is ready to use. A
// sample that breaks the conventions above is left out and recorded in
// Err: a core's tests check Err, and the daemon serves the valid samples
// and logs the rest, so a mistake never costs a scrape.
type MetricSet struct {
	fams  []MetricFamily
	index map[string]int      // name -> position in fams
	seen  map[string]struct{} // name and label values of every sample
	errs  []error
	lost  int // errors beyond maxMetricErrors
}

// Gauge records a gauge sample.
func (s *MetricSet) Gauge(name, help string, v float64, labels ...Label) {
	s.add(MetricGauge, name, help, v, labels)
}

// Counter records a counter sample; name must end in _total.
func (s *MetricSet) Counter(name, help string, v float64, labels ...Label) {
	s.add(MetricCounter, name, help, v, labels)
}

// GaugeBool records a gauge that is 1 when v holds and 0 when not
// (synchronised, is the leader).
func (s *MetricSet) GaugeBool(name, help string, v bool, labels ...Label) {
	f := 0.0
	if v {
		f = 1
	}
	s.add(MetricGauge, name, help, f, labels)
}

// Counters records one counter sample per key of values, labelled
// label=key, in key order: the usual shape of "dropped, by reason".
func (s *MetricSet) Counters(name, help, label string, values map[string]uint64) {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		s.add(MetricCounter, name, help, float64(values[k]), []Label{{Name: label, Value: k}})
	}
}

// Families returns the metrics in the order their names first appeared,
// each with its samples in the order they were added.
func (s *MetricSet) Families() []MetricFamily { return s.fams }

// Value returns the value of the sample of name with exactly these labels
// (in the order they were given), for tests and tools that read one value.
func (s *MetricSet) Value(name string, labels ...Label) (float64, bool) {
	i, ok := s.index[name]
	if !ok {
		return 0, false
	}
	for _, smp := range s.fams[i].Samples {
		if slices.Equal(smp.Labels, labels) {
			return smp.Value, true
		}
	}
	return 0, false
}

// Err reports the samples that were left out, and why; nil if none.
func (s *MetricSet) Err() error {
	errs := s.errs
	if s.lost > 0 {
		errs = append(errs[:len(errs):len(errs)], fmt.Errorf("and %d more invalid metric samples", s.lost))
	}
	return errors.Join(errs...)
}

func (s *MetricSet) fail(format string, args ...any) {
	if len(s.errs) == maxMetricErrors {
		s.lost++
		return
	}
	s.errs = append(s.errs, fmt.Errorf("metric "+format, args...))
}

func (s *MetricSet) add(kind MetricKind, name, help string, v float64, labels []Label) {
	switch {
	case !validName(name):
		s.fail("%q: want a lower_snake_case name", name)
		return
	case help == "" || strings.ContainsAny(help, "\n\\"):
		s.fail("%s: want a one-line help text without backslashes", name)
		return
	case kind == MetricCounter && !strings.HasSuffix(name, "_total"):
		s.fail("%s: a counter's name ends in _total", name)
		return
	case kind == MetricGauge && strings.HasSuffix(name, "_total"):
		s.fail("%s: only counters end in _total", name)
		return
	}
	key := name
	for i, l := range labels {
		switch {
		case !validName(l.Name) || strings.HasPrefix(l.Name, "__"):
			s.fail("%s: label name %q: want lower_snake_case", name, l.Name)
			return
		case l.Name == ReservedLabel:
			s.fail("%s: label %q is the driver's", name, l.Name)
			return
		}
		for _, prev := range labels[:i] {
			if prev.Name == l.Name {
				s.fail("%s: label %q given twice", name, l.Name)
				return
			}
		}
		// NUL cannot occur in a name, so the key is unambiguous.
		key += "\x00" + l.Name + "\x00" + l.Value
	}
	if _, dup := s.seen[key]; dup {
		s.fail("%s%s: sample given twice", name, labelText(labels))
		return
	}
	i, ok := s.index[name]
	if ok {
		f := &s.fams[i]
		if f.Kind != kind || f.Help != help {
			s.fail("%s: a %v here, a %v with help %q before: one name, one meaning", name, kind, f.Kind, f.Help)
			return
		}
		if !sameLabelNames(f.Samples[0].Labels, labels) {
			s.fail("%s%s: labels differ from the first sample's %s", name, labelText(labels), labelText(f.Samples[0].Labels))
			return
		}
	} else {
		if s.index == nil {
			s.index = map[string]int{}
			s.seen = map[string]struct{}{}
		}
		i = len(s.fams)
		s.index[name] = i
		s.fams = append(s.fams, MetricFamily{Name: name, Help: help, Kind: kind})
	}
	s.seen[key] = struct{}{}
	// The caller's slice may be reused for the next sample.
	s.fams[i].Samples = append(s.fams[i].Samples, Sample{Labels: append([]Label(nil), labels...), Value: v})
}

func validName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

func sameLabelNames(a, b []Label) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}

func labelText(labels []Label) string {
	if len(labels) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", l.Name, l.Value)
	}
	b.WriteByte('}')
	return b.String()
}
