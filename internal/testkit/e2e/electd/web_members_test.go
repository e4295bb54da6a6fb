package electd

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/web"
)

// TestWebMembersTraces (issue 35, every member's trace): `electd web` on
// host 1 draws the events of the other hosts' daemons, asked for over the
// cluster protocol: the diagram holds a frame that host 3 sent and host 2
// received, neither of them host 1. Killed, host 3 is shown as not
// answering traces, with the cause.
func TestWebMembersTraces(t *testing.T) {
	c, w := webLab(t)
	var st web.State
	var frame string
	c.Eventually("host 1's page draws a frame from host 3 received on host 2", 30*time.Second, func() bool {
		var err error
		if st, err = w.State(); err != nil || st.Trace.Diagram == 0 {
			return false
		}
		frame = frameBetween(t, w.Base, st.Trace.Diagram, 3, 2)
		return frame != ""
	})
	t.Logf("host 1's page drew frame %s, sent by host 3 and received on host 2", frame)
	for _, m := range st.Trace.Members {
		if !m.Answering || m.Events == 0 {
			t.Errorf("member %d's trace %+v", m.ID, m)
		}
	}
	if !strings.Contains(st.Trace.Scope, "every member's trace") {
		t.Errorf("scope %q", st.Trace.Scope)
	}

	c.Procs[3].Process.Kill()
	c.Procs[3].Wait()
	c.Eventually("host 3 shown as not answering traces", 20*time.Second, func() bool {
		st, _ = w.State()
		for _, m := range st.Trace.Members {
			if m.ID == 3 && !m.Answering && strings.Contains(m.Why, "no trace chunk within") {
				return true
			}
		}
		return false
	})
}

// frameBetween reads drawing n of the page at base and returns a frame
// that member from sent and member to received ("" if none).
func frameBetween(t *testing.T, base string, n int, from, to uint32) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/api/diagram?n=%d", base, n))
	if err != nil {
		return ""
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	const open = `<script type="application/json" id="data">`
	s := string(b)
	i := strings.Index(s, open)
	if i < 0 {
		return ""
	}
	s = s[i+len(open):]
	s = s[:strings.Index(s, "</script>")]
	var pg struct {
		Procs []struct {
			ID uint32 `json:"id"`
		} `json:"procs"`
		Groups []struct {
			Proc int `json:"p"`
		} `json:"groups"`
		Events []struct {
			Group int `json:"g"`
		} `json:"events"`
		Msgs []struct {
			Send  int    `json:"s"`
			Recv  int    `json:"r"`
			Frame string `json:"frame"`
		} `json:"msgs"`
	}
	if err := json.Unmarshal([]byte(s), &pg); err != nil {
		t.Fatalf("the diagram's data: %v", err)
	}
	member := func(ev int) uint32 {
		if ev < 0 || ev >= len(pg.Events) {
			return 0
		}
		return pg.Procs[pg.Groups[pg.Events[ev].Group].Proc].ID
	}
	for _, m := range pg.Msgs {
		if member(m.Send) == from && member(m.Recv) == to {
			return m.Frame
		}
	}
	return ""
}
