package bench

import (
	"os"
	"strings"
	"testing"
	"time"
)

func ExampleTable() {
	t := &Table{Title: "failover", Systems: []string{"electd", "etcd"}}
	t.Section("after SIGKILL of the leader")
	t.Row("p50", "", Millis(402*time.Millisecond), Millis(1941*time.Millisecond))
	t.Row("p99", "<= 500 ms", Verdict(Millis(429*time.Millisecond), true), Millis(2223*time.Millisecond))
	t.Row("elections", "0")
	t.Note("p99 is nearest-rank")
	t.Write(os.Stdout)
	// Output:
	// failover
	// ========
	// metric       electd       etcd       target
	// # after SIGKILL of the leader
	//   p50        402.0 ms     1941.0 ms
	//   p99        429.0 ms ok  2223.0 ms  <= 500 ms
	//   elections  -            -          0
	//   * p99 is nearest-rank
}

func TestTableRejectsExtraCells(t *testing.T) {
	tb := &Table{Systems: []string{"a"}}
	tb.Row("m", "", "1", "2")
	var b strings.Builder
	if err := tb.Write(&b); err == nil {
		t.Errorf("a row with more cells than systems was written:\n%s", b.String())
	}
}

func TestVerdict(t *testing.T) {
	if Verdict("1", true) != "1 ok" || Verdict("1", false) != "1 MISS" {
		t.Error("Verdict")
	}
}
