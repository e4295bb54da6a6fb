package browser

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestErrorsSeen: the harness sees what a page does (Eval, WaitFor) and
// catches an uncaught script error, so that a test checking for none can
// fail.
func TestErrorsSeen(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte(`<!DOCTYPE html><body><script>setTimeout(function(){document.body.dataset.ready="1";}, 50);</script></body>`))
		default:
			w.Write([]byte(`<!DOCTYPE html><body><script>setTimeout(function(){ undefinedThing.go(); }, 50);</script></body>`))
		}
	}))
	defer hs.Close()
	b := Launch(t)
	p := b.Open(t, hs.URL+"/ok", 400, 300)
	if _, err := p.WaitFor(context.Background(), `document.body && document.body.dataset.ready === "1"`, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if errs := b.Errors(); len(errs) != 0 {
		t.Fatalf("errors from a page without any: %q", errs)
	}
	png, err := p.Screenshot()
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatalf("screenshot: %v (%d bytes)", err, len(png))
	}
	b.Open(t, hs.URL+"/bad", 400, 300)
	deadline := time.Now().Add(20 * time.Second)
	for len(b.Errors()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if errs := b.Errors(); len(errs) == 0 || !strings.Contains(strings.Join(errs, " "), "undefinedThing") {
		t.Errorf("the thrown error is not seen: %q", errs)
	}
}
