package orderd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOrderdPlainMessages: a message sent with `orderd send --order total`
// is no business of the state machine, even one that reads like a command
// ("set the table"): `orderd log` shows it as sent, not "-> refused: rsm:
// refused: unknown command"; the state has no key "the" and counts only
// the command `orderd apply` sent; the hook gets the text as sent;
// `orderd log --json` carries the text beside the base64, so a grep finds
// it; and the human log says whose deliveries it lists.
func TestOrderdPlainMessages(t *testing.T) {
	const n = 3
	c := newCluster(t, "orderd", n)
	hooks := func(i int) string { return filepath.Join(c.Dir, fmt.Sprintf("deliveries%d", i)) }
	for i := 1; i <= n; i++ {
		c.Extra[i] = []string{"--on-deliver", `echo "$ORDERD_ORDER $ORDERD_SENDER $ORDERD_MESSAGE|$ORDERD_RESULT" >> ` + hooks(i)}
		c.Start(i)
	}
	c.awaitSequencer(3, n)
	if out, err := c.orderd(1, "send", "--order", "total", "set the table"); err != nil {
		t.Fatalf("send: %v %s", err, out)
	}
	if out, err := c.orderd(2, "send", "--order", "total", "hello lab"); err != nil {
		t.Fatalf("send: %v %s", err, out)
	}
	if out, err := c.orderd(2, "apply", "deposit 5"); err != nil || !strings.Contains(out, "balance 5.00") {
		t.Fatalf("apply: %v %s", err, out)
	}
	c.sameState(1, 1, 2, 3)
	if st := c.orderState(3); st.KV["the"] != "" || st.Balance != "5.00" {
		t.Errorf("state %+v: a plain message was applied", st)
	}
	for i := 1; i <= n; i++ {
		c.Eventually(fmt.Sprintf("host %d's hooks ran for the three messages", i), 5*time.Second, func() bool {
			b, _ := os.ReadFile(hooks(i))
			return strings.Count(string(b), "\n") == 3
		})
		b, _ := os.ReadFile(hooks(i))
		for _, want := range []string{"total 1 set the table|\n", "total 2 hello lab|\n", "total 2 deposit 5|balance 5.00\n"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("host %d's hooks lack %q:\n%s", i, want, b)
			}
		}
	}

	out, err := c.orderd(3, "log")
	if err != nil {
		t.Fatalf("log: %v %s", err, out)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "# deliveries of this orderd since it started at ") || !strings.Contains(lines[0], "a restart starts this list afresh") {
		t.Errorf("the log does not say whose deliveries it lists:\n%s", out)
	}
	if strings.Contains(out, "refused") || !strings.Contains(out, `total from 1 seq=1 "set the table"`) || !strings.Contains(out, `"deposit 5" -> balance 5.00`) {
		t.Errorf("log:\n%s", out)
	}

	out, err = c.orderd(3, "log", "--json")
	if err != nil {
		t.Fatalf("log --json: %v %s", err, out)
	}
	if !strings.Contains(out, `"text":"set the table"`) {
		t.Errorf("log --json: a grep for the text finds nothing:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		var d struct {
			Message []byte `json:"message"`
			Text    string `json:"text"`
			Plain   bool   `json:"plain"`
			Error   string `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("log --json line %q: %v", line, err)
		}
		if plain := d.Text != "deposit 5"; d.Plain != plain || d.Error != "" || !strings.HasSuffix(string(d.Message), d.Text) {
			t.Errorf("log --json line %s", line)
		}
	}
}
