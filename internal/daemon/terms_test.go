package daemon

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
)

// TestTermsForPeople: a term (every core's "term" is an owned epoch) reads
// "3 by 2" in the text log and in hooks, with its round, owner and raw
// value beside it in hooks; the JSON log and the event stream keep the raw
// number. It read ELECTD_TERM=21474836482 and term=4294967299.
func TestTermsForPeople(t *testing.T) {
	term := epoch.Make(5, 2) // 21474836482
	e := core.Event{Name: "elected", Msg: "elected leader", Args: []any{"leader", uint32(2), "term", term}}

	env := hookEnv("ELECTD", 2, e)
	for _, want := range []string{"ELECTD_TERM=5 by 2", "ELECTD_TERM_ROUND=5", "ELECTD_TERM_OWNER=2", "ELECTD_TERM_RAW=21474836482", "ELECTD_LEADER=2"} {
		if !slices.Contains(env, want) {
			t.Errorf("hook environment lacks %s: %v", want, env)
		}
	}

	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info(e.Msg, logArgs(e.Args)...)
	slog.New(slog.NewJSONHandler(&js, nil)).Info(e.Msg, logArgs(e.Args)...)
	if !strings.Contains(text.String(), `term="5 by 2"`) {
		t.Errorf("text log: %s", text.String())
	}
	var rec map[string]any
	if err := json.Unmarshal(js.Bytes(), &rec); err != nil || rec["term"] != float64(term) {
		t.Errorf("JSON log: %s (%v): want the raw term", js.String(), err)
	}
	if got := attrs(e.Args)["term"]; got != term {
		t.Errorf("event stream term %v (%T), want the raw %d", got, got, term)
	}
	if e.Args[3] != term {
		t.Errorf("logArgs changed the event's own args: %v", e.Args)
	}
}
