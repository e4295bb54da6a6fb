// Package browser drives headless Chromium for tests over the DevTools
// protocol on a pipe (--remote-debugging-pipe: JSON messages ended by a
// NUL byte on file descriptors 3 and 4), with no WebSocket and no
// library: open a page, evaluate script in it, take a screenshot, and
// collect the page's uncaught script errors. Chromium is Debian's
// chromium, which scripts/install-test-deps.sh installs; without it a
// test ends through testenv (a skip, or a failure in CI).
//
//	b := browser.Launch(t)
//	p := b.Open(t, "http://127.0.0.1:8080/")
//	var title string
//	p.Eval(t, "document.title", &title)
package browser

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/testenv"
)

// Browser is a running headless Chromium.
type Browser struct {
	cmd *exec.Cmd
	in  *os.File // our end of Chromium's fd 3 (it reads commands)

	mu      sync.Mutex
	next    int
	waiting map[int]chan reply
	errs    []string // uncaught exceptions and console errors, every page's
	dead    error
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type message struct {
	ID        int             `json:"id"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
	reply
}

// Launch starts Chromium; it is killed when the test ends.
func Launch(t testing.TB) *Browser {
	t.Helper()
	bin := testenv.RequireTool(t, "chromium", "chromium", "chromium-browser", "google-chrome")
	dir := t.TempDir()
	// Chromium reads commands on fd 3 and writes answers on fd 4.
	cr, ourW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ourR, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--hide-scrollbars", "--remote-debugging-pipe", "--user-data-dir="+filepath.Join(dir, "profile"), "about:blank")
	cmd.ExtraFiles = []*os.File{cr, cw}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	cr.Close()
	cw.Close()
	b := &Browser{cmd: cmd, in: ourW, waiting: map[int]chan reply{}}
	done := make(chan struct{})
	go func() { defer close(done); b.read(ourR) }()
	t.Cleanup(func() {
		ourW.Close()
		cmd.Process.Kill()
		cmd.Wait()
		ourR.Close()
		<-done
		if t.Failed() {
			t.Logf("chromium's stderr (last 2000 bytes): %s", tail(stderr.Bytes(), 2000))
		}
	})
	return b
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func (b *Browser) read(r *os.File) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.dead = fmt.Errorf("chromium's pipe ended: %v", err)
			for id, ch := range b.waiting {
				close(ch)
				delete(b.waiting, id)
			}
			b.mu.Unlock()
			return
		}
		var m message
		if json.Unmarshal(line[:len(line)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		switch {
		case m.ID != 0:
			if ch := b.waiting[m.ID]; ch != nil {
				ch <- m.reply
				delete(b.waiting, m.ID)
			}
		case m.Method == "Runtime.exceptionThrown":
			var p struct {
				Details struct {
					Text      string `json:"text"`
					Exception struct {
						Description string `json:"description"`
					} `json:"exception"`
				} `json:"exceptionDetails"`
			}
			json.Unmarshal(m.Params, &p)
			b.errs = append(b.errs, p.Details.Text+" "+p.Details.Exception.Description)
		case m.Method == "Log.entryAdded":
			var p struct {
				Entry struct {
					Level, Text, URL string
				} `json:"entry"`
			}
			json.Unmarshal(m.Params, &p)
			if p.Entry.Level == "error" {
				b.errs = append(b.errs, p.Entry.Text+" ("+p.Entry.URL+")")
			}
		}
		b.mu.Unlock()
	}
}

// call sends one command (to a page's session, or to the browser when
// session is "") and decodes its result into out.
func (b *Browser) call(session, method string, params, out any) error {
	b.mu.Lock()
	if b.dead != nil {
		b.mu.Unlock()
		return b.dead
	}
	b.next++
	id := b.next
	ch := make(chan reply, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := b.in.Write(append(data, 0)); err != nil {
		return fmt.Errorf("%s: %v", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: chromium went away", method)
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-time.After(60 * time.Second):
		return fmt.Errorf("%s: no answer from chromium in 60s", method)
	}
}

// Errors returns the script errors every page raised so far (uncaught
// exceptions, console errors, failed loads).
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// exception is a script exception Eval met.
type exception struct{ expr, text string }

func (e *exception) Error() string { return fmt.Sprintf("evaluating %q: %s", e.expr, e.text) }

// Page is one tab.
type Page struct {
	b       *Browser
	session string
}

// Open opens url in a new tab of width×height CSS pixels.
func (b *Browser) Open(t testing.TB, url string, width, height int) *Page {
	t.Helper()
	var tg struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &tg); err != nil {
		t.Fatal(err)
	}
	var at struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": tg.TargetID, "flatten": true}, &at); err != nil {
		t.Fatal(err)
	}
	p := &Page{b: b, session: at.SessionID}
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable"} {
		if err := b.call(p.session, m, map[string]any{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.call(p.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.call(p.session, "Page.navigate", map[string]any{"url": url}, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// Eval evaluates the expression in the page and decodes its value (JSON)
// into out; a thrown exception is an error.
func (p *Page) Eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return err
	}
	if r.Exception != nil {
		return &exception{expr, r.Exception.Text}
	}
	if out == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// WaitFor evaluates expr (a boolean) every 20ms until it is true or
// within has passed; it returns when it became true. An exception counts
// as false (the page may still be loading); the last one is in the error.
func (p *Page) WaitFor(ctx context.Context, expr string, within time.Duration) (time.Time, error) {
	deadline := time.Now().Add(within)
	var last error
	for {
		var ok bool
		err := p.Eval(expr, &ok)
		var ex *exception
		switch {
		case errors.As(err, &ex):
			last = err
		case err != nil:
			return time.Time{}, err
		case ok:
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			if last != nil {
				return time.Time{}, fmt.Errorf("%s: not true within %v (the last exception: %v)", expr, within, last)
			}
			return time.Time{}, fmt.Errorf("%s: not true within %v", expr, within)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Screenshot returns the page as a PNG, the whole of it (not only what
// the window shows).
func (p *Page) Screenshot() ([]byte, error) {
	var r struct {
		Data string `json:"data"`
	}
	if err := p.b.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &r); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(r.Data)
}

// CheckNoScriptError fails the test if any page raised a script error,
// or if this page's own error handler recorded one (synclab's pages set
// data-error on their body).
func (p *Page) CheckNoScriptError(t testing.TB) {
	t.Helper()
	if errs := p.b.Errors(); len(errs) > 0 {
		t.Errorf("script errors: %q", errs)
	}
	var dataErr string
	if err := p.Eval(`document.body.dataset.error || ""`, &dataErr); err != nil {
		t.Error(err)
	}
	if dataErr != "" {
		t.Errorf("the page's script failed: %s", dataErr)
	}
}
