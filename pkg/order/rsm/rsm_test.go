package rsm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/synclab/synclab/pkg/wire"
)

func apply(t *testing.T, m *Machine, cmds ...string) {
	t.Helper()
	for _, c := range cmds {
		if _, err := m.Apply([]byte(c)); err != nil {
			t.Fatalf("%q: %v", c, err)
		}
	}
}

// The notes' example: $1000, +$100 and +1% in either order.
func TestAccountOrderMatters(t *testing.T) {
	a, b := New(), New()
	apply(t, a, "balance 1000", "deposit 100", "interest 1%")
	apply(t, b, "balance 1000", "interest 1%", "deposit 100")
	if Format(a.Cents) != "1111.00" || Format(b.Cents) != "1110.00" {
		t.Fatalf("got %s and %s, want 1111.00 and 1110.00", Format(a.Cents), Format(b.Cents))
	}
}

func TestInterestRounding(t *testing.T) {
	for _, c := range []struct {
		cents, bp, want int64
	}{
		{1050, 100, 11},       // 10.5 cents: half away from zero
		{1049, 100, 10},       // 10.49
		{1, 5000, 1},          // 0.5
		{1, 4999, 0},          // 0.4999
		{100000, 25, 250},     // 0.25% of $1000
		{-1050, 100, -11},     // a negative balance (set with balance? never: refused) still rounds symmetrically
		{123456789, 1, 12346}, // 12345.6789
	} {
		if got := Interest(c.cents, c.bp); got.Int64() != c.want {
			t.Errorf("Interest(%d, %d) = %v, want %d", c.cents, c.bp, got, c.want)
		}
	}
}

func TestRefusals(t *testing.T) {
	m := New()
	apply(t, m, "balance 10")
	for _, c := range []string{"", "withdraw 11", "deposit -1", "deposit 1.234", "deposit 1e3", "interest 1", "interest x%",
		"deposit 92233720368547758", "fly away", "set k", "del nothing", "balance 1.", "deposit .5"} {
		if _, err := m.Apply([]byte(c)); !errors.Is(err, ErrCommand) {
			t.Errorf("%q: err %v, want ErrCommand", c, err)
		}
	}
	if m.Cents != 1000 {
		t.Fatalf("refused commands changed the balance to %d", m.Cents)
	}
	apply(t, m, "balance 92233720368547757")
	if _, err := m.Apply([]byte("interest 100%")); !errors.Is(err, ErrCommand) {
		t.Fatalf("overflowing interest: %v", err)
	}
}

func TestKV(t *testing.T) {
	m := New()
	apply(t, m, "set motd hello lab  world", "set x 1", "del x")
	if v, _ := m.Get("motd"); v != "hello lab  world" {
		t.Fatalf("motd %q", v)
	}
	if _, ok := m.Get("x"); ok {
		t.Fatal("x not deleted")
	}
	n := New()
	if err := n.Restore(m.Snapshot()); err != nil || n.Describe() != m.Describe() {
		t.Fatalf("restore: %v, %s vs %s", err, n.Describe(), m.Describe())
	}
	if err := n.Restore([]byte("{")); err == nil {
		t.Fatal("corrupt snapshot restored")
	}
}

// The largest map fits a snapshot frame.
func TestLargestSnapshotFits(t *testing.T) {
	m := New()
	v := strings.Repeat(`"\<&`, MaxValueLen/4)
	for i := range MaxKeys {
		k := fmt.Sprintf("%0*d", MaxKeyLen, i)
		apply(t, m, "set "+k+" "+v)
	}
	if n := len(m.Snapshot()); n > wire.MaxOrderSnapshot-1000 {
		t.Fatalf("snapshot of %d bytes", n)
	}
	if _, err := m.Apply([]byte("set k \x01")); !errors.Is(err, ErrCommand) {
		t.Fatal("control character accepted")
	}
}

// TestPlainMessages: a plain message is no command, even one that reads
// like one ("set the table"): no result, no refusal, no change, not
// counted. A machine that knows no mark (an older orderd, here one that
// sees the marked bytes as a command word) refuses it and changes nothing
// but its count: the account and the keys stay the same in a mixed
// cluster.
func TestPlainMessages(t *testing.T) {
	m := New()
	apply(t, m, "balance 10")
	for _, text := range []string{"hello lab", "set the table", "deposit 100", ""} {
		msg := Plain([]byte(text))
		if got, plain := Text(msg); !plain || string(got) != text {
			t.Errorf("Text(Plain(%q)) = %q, %v", text, got, plain)
		}
		res, err := m.Apply(msg)
		if res != "" || err != nil {
			t.Errorf("plain %q: %q, %v; want no result and no refusal", text, res, err)
		}
		// What an orderd without the mark does with it.
		f := strings.Fields(string(msg))
		if len(f) > 0 && slices.Contains([]string{"deposit", "withdraw", "interest", "balance", "set", "del"}, f[0]) {
			t.Errorf("plain %q reads as the command %q to a machine without the mark", text, f[0])
		}
	}
	if Format(m.Cents) != "10.00" || len(m.KV) != 0 || m.Applied != 1 {
		t.Errorf("after plain messages: %s, %v, applied %d; want 10.00, no keys, 1", Format(m.Cents), m.KV, m.Applied)
	}
	if _, plain := Text([]byte("deposit 1")); plain {
		t.Error("a command reads as plain")
	}
}
