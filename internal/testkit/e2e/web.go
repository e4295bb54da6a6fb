package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synclab/synclab/internal/web"
)

// Web is `X web` run against one host of a Cluster, on a free loopback
// port; killed when the test ends unless stopped (Stop), its log shown if
// the test failed.
type Web struct {
	T    *testing.T
	Base string // http://127.0.0.1:PORT
	cmd  *exec.Cmd
	done bool
}

// StartWeb runs `X web` on host i's control socket with extra flags.
func (c *Cluster) StartWeb(i int, extra ...string) *Web {
	t := c.T
	t.Helper()
	port := FreePort(t, "127.0.0.1")
	w := &Web{T: t, Base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	logPath := filepath.Join(c.Dir, fmt.Sprintf("web%d.log", i))
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	w.cmd = exec.Command(filepath.Join(binDir, c.Daemon), append([]string{"web", "--control", c.Control(i),
		"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--lab-file", ""}, extra...)...)
	w.cmd.Stdout, w.cmd.Stderr = log, log
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !w.done {
			w.cmd.Process.Kill()
			w.cmd.Wait()
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s web's log:\n%s", c.Daemon, b)
		}
	})
	return w
}

// State is GET /api/state.
func (w *Web) State() (web.State, error) {
	var st web.State
	resp, err := http.Get(w.Base + "/api/state")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET /api/state: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// Refuses checks that a POST to each path is refused with 405.
func (w *Web) Refuses(paths ...string) {
	w.T.Helper()
	for _, path := range paths {
		resp, err := http.Post(w.Base+path, "application/json", strings.NewReader("{}"))
		if err != nil {
			w.T.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			w.T.Errorf("POST %s: %d, want 405", path, resp.StatusCode)
		}
	}
}

// Stop interrupts `X web` as Ctrl-C does and waits for it to exit 0.
func (w *Web) Stop() {
	w.T.Helper()
	w.cmd.Process.Signal(os.Interrupt)
	err := w.cmd.Wait()
	w.done = true
	if err != nil {
		w.T.Errorf("web after SIGINT: %v", err)
	}
}

// WebCell is a script expression for the live page: the text of member
// id's cell under header in the page's table ("" if not drawn).
func WebCell(id int, header string) string {
	return fmt.Sprintf(`(function () {
  var h = Array.prototype.map.call(document.querySelectorAll("#table th"), function (x) { return x.textContent; });
  var i = h.indexOf(%q), r = document.querySelector('#table tr.member[data-id="%d"]');
  return r && i >= 0 ? r.cells[i].textContent : "";
})()`, header, id)
}

// WebDiagramReady is a script expression for the live page: its frame's
// diagram finished drawing.
const WebDiagramReady = `(function(){var f=document.getElementById("diagram");var d=f&&f.contentDocument;return !!(d&&d.body&&d.body.dataset.ready==="1");})()`

// WebTraceFiles lists what is left in host i's traces directory.
func (c *Cluster) WebTraceFiles(i int) []string {
	left, _ := filepath.Glob(filepath.Join(c.Dir, fmt.Sprintf("h%d.state", i), "traces", "*"))
	return left
}
