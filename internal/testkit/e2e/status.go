package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Field reads the value at path in a status, nil if absent.
func Field(st map[string]any, path ...string) any {
	var v any = st
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// Num reads a number at path in a status, 0 if absent.
func Num(st map[string]any, path ...string) float64 {
	f, _ := Field(st, path...).(float64)
	return f
}

// TailString is the last n bytes of s.
func TailString(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// LeaderOf is member i's leader and term from its status (electd's core,
// or timed's Berkeley election).
func LeaderOf(st map[string]any, path ...string) (uint32, uint64) {
	core := append([]string{"node", "core"}, path...)
	return uint32(Num(st, append(core, "leader")...)), uint64(Num(st, append(core, "term")...))
}

// StatusOf runs `daemon status --json` against control.
func StatusOf(t *testing.T, daemon, control string) map[string]any {
	t.Helper()
	var st map[string]any
	if err := json.Unmarshal(StatusJSON(t, daemon, control), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// StatusJSON is the output of `daemon status --json` against control.
func StatusJSON(t *testing.T, daemon, control string) []byte {
	t.Helper()
	out, err := exec.Command(filepath.Join(binDir, daemon), "status", "--json", "--control", control).Output()
	if err != nil {
		t.Fatalf("%s status: %v", daemon, err)
	}
	return out
}

// PeerSeq is the newest sequence number the daemon at control accepted
// from member id (decoded exactly: a float64 would round it).
func PeerSeq(t *testing.T, daemon, control string, id uint32) uint64 {
	t.Helper()
	var st struct {
		Node struct {
			Peers []struct {
				ID  uint32 `json:"id"`
				Seq uint64 `json:"seq"`
			} `json:"peers"`
		} `json:"node"`
	}
	if err := json.Unmarshal(StatusJSON(t, daemon, control), &st); err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Node.Peers {
		if p.ID == id {
			return p.Seq
		}
	}
	return 0
}

// TimedQueryJSON is the part of `timed query --json` the tests read.
type TimedQueryJSON struct {
	Valid        bool   `json:"valid"`
	Error        string `json:"error"`
	KissCode     string `json:"kiss_code"`
	OffsetNs     int64  `json:"offset_ns"`
	DelayNs      int64  `json:"delay_ns"`
	ErrorBoundNs int64  `json:"error_bound_ns"`
	Stratum      uint8  `json:"stratum"`
	Leap         uint8  `json:"leap"`
	RefID        string `json:"refid"`
	Samples      []struct {
		Valid  bool   `json:"valid"`
		Result string `json:"result"`
	} `json:"samples"`
}

// Within reports whether got is want to within tol.
func Within(got, want, tol time.Duration) bool { return got-want <= tol && want-got <= tol }
