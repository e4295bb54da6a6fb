package central_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// TestStatusVectorWithheldWhileUnsaved: `mutexd status` showed the
// member's vector ("what a program message sent now carries") while
// Vector (`mutexd vector`) refused it as unsaved: an administrator who
// copied it from status got the stamp the 503 withholds (review-mutex4).
// Status now says it is withheld, and shows it once the write succeeds.
func TestStatusVectorWithheldWhileUnsaved(t *testing.T) {
	env := core.Env{ID: 1, Members: []uint32{1, 2, 3}, Now: time.Unix(1000, 0)}
	cfg := central.DefaultLANConfig()
	cfg.Variant = central.TokenAsk
	c, err := central.New(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(env.Now, mutex.Request{Lock: "x"}); err != nil {
		t.Fatal(err)
	}
	c.Ready()
	c.Advance(false)
	_, verr := c.Vector()
	d := c.Report().Detail.(central.Detail)
	if verr == nil || d.Vector != "" || !d.VectorUnsaved {
		t.Fatalf("the write failed: Vector %v, status shows vector %q (withheld %v); want refused, empty and withheld", verr, d.Vector, d.VectorUnsaved)
	}
	c.Ready()
	c.Advance(true)
	v, verr := c.Vector()
	d = c.Report().Detail.(central.Detail)
	if verr != nil || d.Vector != central.VectorText(v) || d.VectorUnsaved {
		t.Fatalf("after the write: Vector %s, %v; status %q (withheld %v)", central.VectorText(v), verr, d.Vector, d.VectorUnsaved)
	}
}
