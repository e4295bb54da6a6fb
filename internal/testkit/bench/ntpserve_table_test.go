package bench

import (
	"strings"
	"testing"
)

// TestNTPServeTableTargets: the ntpserve table judges timed by issue 34's
// goals, replies/s at least 1.2x chronyd's and CPU per reply at most 0.8x
// chronyd's, per concurrency, and prints the floor's column beside them
// when the floor was measured (and not otherwise).
func TestNTPServeTableTargets(t *testing.T) {
	server := func(name string, qps, perReply float64) *ntpServer {
		return &ntpServer{name: name,
			qps:      map[int][]float64{1: {qps, qps}, 8: {qps, qps}},
			cpu:      map[int][]float64{1: {0.5}, 8: {0.5}},
			perReply: map[int][]float64{1: {perReply, perReply}, 8: {perReply, perReply}},
			rssIdle:  5_000_000, rssLoad: 6_000_000}
	}
	rows := func(servers []*ntpServer) map[string][]string {
		var b strings.Builder
		if err := ntpServeTable(servers, []int{1}, "0.1 0.1 0.1", "slbtest").Write(&b); err != nil {
			t.Fatal(err)
		}
		if floor := strings.Contains(b.String(), "floor (C"); floor != (len(servers) > 2) {
			t.Errorf("floor column %v with %d servers:\n%s", floor, len(servers), b.String())
		}
		got := map[string][]string{}
		section := ""
		for _, l := range strings.Split(b.String(), "\n") {
			switch {
			case strings.HasPrefix(l, "# "):
				section = l
			case strings.HasPrefix(l, "  1 clients"):
				got[section] = append(got[section], l)
			}
		}
		if len(got) != 3 {
			t.Fatalf("want 3 sections with a 1-client row, got %q in\n%s", got, b.String())
		}
		return got
	}
	find := func(got map[string][]string, prefix string) string {
		for s, ls := range got {
			if strings.HasPrefix(s, prefix) {
				return ls[0]
			}
		}
		t.Fatalf("no section %q in %q", prefix, got)
		return ""
	}
	chrony := server("chronyd", 10_000, 10e-6)

	// 1.25x the replies at 0.75x the CPU: both goals met.
	got := rows([]*ntpServer{server("timed", 12_500, 7.5e-6), chrony})
	if r := find(got, "# replies/s"); !strings.Contains(r, "12500 (1.25x;") || !strings.Contains(r, " ok") || !strings.Contains(r, ">= 1.2x chronyd") {
		t.Errorf("replies row %q: want 1.25x ok against >= 1.2x", r)
	}
	if r := find(got, "# server CPU per reply"); !strings.Contains(r, "7.50 (0.75x) ok") || !strings.Contains(r, "<= 0.8x chronyd") {
		t.Errorf("CPU row %q: want 7.50 us (0.75x) ok against <= 0.8x", r)
	}

	// A chronyd that answered nothing is no ground for "ok".
	got = rows([]*ntpServer{server("timed", 12_500, 7.5e-6), server("chronyd", 0, 0)})
	if r := find(got, "# server CPU per reply"); !strings.Contains(r, "MISS") {
		t.Errorf("CPU row %q against a chronyd without replies: want MISS", r)
	}

	// 1.1x the replies at 0.9x the CPU: both missed; the floor's column.
	got = rows([]*ntpServer{server("timed", 11_000, 9e-6), chrony, server("floor", 12_000, 8.5e-6)})
	if r := find(got, "# replies/s"); !strings.Contains(r, "(1.10x;") || !strings.Contains(r, "MISS") || !strings.Contains(r, "12000 (1.20x;") {
		t.Errorf("replies row %q: want timed 1.10x MISS and the floor's 1.20x", r)
	}
	if r := find(got, "# server CPU per reply"); !strings.Contains(r, "9.00 (0.90x) MISS") || !strings.Contains(r, "8.50 (0.85x)") {
		t.Errorf("CPU row %q: want timed 0.90x MISS and the floor's 0.85x", r)
	}
}
