package core

import (
	"errors"
	"fmt"
	"testing"
)

type appender struct{ err error }

func (a appender) AppendBinary(b []byte) ([]byte, error) {
	if a.err != nil {
		return b, a.err
	}
	return append(b, 1, 2), nil
}

func TestBugsEncode(t *testing.T) {
	var bugs Bugs
	var rd Ready
	if b, ok := bugs.Encode(&rd.Events, "ping", appender{}, nil); !ok || len(b) != 2 || len(rd.Events) != 0 {
		t.Fatalf("a good encoding: %v %v, events %v", b, ok, rd.Events)
	}
	if b, ok := bugs.Encode(&rd.Events, "ping", appender{err: errors.New("field out of range")}, nil); ok || b != nil {
		t.Fatalf("a failed encoding returned %v %v", b, ok)
	}
	if len(rd.Events) != 1 || rd.Events[0].Name != EventBug || bugs.Counts()["encode_ping"] != 1 {
		t.Fatalf("the bug was not reported and counted: %+v %v", rd.Events, bugs.Counts())
	}
}

func TestErrorLabels(t *testing.T) {
	errA, errB := errors.New("a"), errors.New("b")
	ls := ErrorLabels{{errA, "is_a"}, {errB, "is_b"}}
	for err, want := range map[error]string{
		fmt.Errorf("wrapped: %w", errB): "is_b",
		errA:                            "is_a",
		errors.New("other"):             "other",
	} {
		if got := ls.Of(err, "other"); got != want {
			t.Errorf("%v: %q, want %q", err, got, want)
		}
	}
}
