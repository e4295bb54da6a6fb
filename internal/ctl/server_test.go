package ctl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/rawsock"
	"github.com/synclab/synclab/internal/testkit/testenv"
)

// socketDir returns a short directory for sockets: t.TempDir() paths can
// exceed the 107 bytes a unix socket address holds.
func socketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serve starts a server on a fresh socket; register runs before Serve.
func serve(t testing.TB, opts ListenOptions, register func(*Server)) (*Server, *Client) {
	t.Helper()
	path := filepath.Join(socketDir(t), "control.sock")
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s, err := Listen(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if register != nil {
		register(s)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	c := NewClient(path, "timed")
	t.Cleanup(func() {
		c.Close()
		s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
	})
	return s, c
}

// quiet swallows the server's log (refusals, panics the tests provoke).
var quiet = slog.New(slog.DiscardHandler)

// hangGuard bounds every wait for something that takes milliseconds on a
// quiet host: a guard against a hang, never the thing tested, and long
// enough that a loaded host never reaches it while the code works.
const hangGuard = time.Minute

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

type statusT struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	PID   int32  `json:"pid"`
}

func TestRoundTrip(t *testing.T) {
	s, c := serve(t, ListenOptions{}, func(s *Server) {
		s.Handle(http.MethodGet, "/v1/status", func(r *http.Request) (any, error) {
			p, ok := PeerOf(r)
			if !ok {
				return nil, errors.New("no peer credentials")
			}
			return statusT{Name: "timed", Count: 7, PID: p.PID}, nil
		})
		s.Handle(http.MethodPost, "/v1/locks/{name}", func(r *http.Request) (any, error) {
			var in struct {
				TimeoutMs int `json:"timeout_ms"`
			}
			if err := Decode(r, &in); err != nil {
				return nil, err
			}
			return map[string]any{"name": r.PathValue("name"), "timeout_ms": in.TimeoutMs}, nil
		})
		s.Handle(http.MethodPost, "/v1/noop", func(*http.Request) (any, error) { return nil, nil })
	})
	ctx := ctxTimeout(t, hangGuard)

	var st statusT
	if err := c.Get(ctx, "/v1/status", &st); err != nil {
		t.Fatal(err)
	}
	if want := (statusT{Name: "timed", Count: 7, PID: int32(os.Getpid())}); st != want {
		t.Errorf("status = %+v, want %+v (PID from SO_PEERCRED)", st, want)
	}

	var out struct {
		Name      string `json:"name"`
		TimeoutMs int    `json:"timeout_ms"`
	}
	if err := c.Post(ctx, "/v1/locks/db", map[string]int{"timeout_ms": 1500}, &out); err != nil {
		t.Fatal(err)
	}
	if out.Name != "db" || out.TimeoutMs != 1500 {
		t.Errorf("lock answer = %+v, want db/1500", out)
	}

	// 204: out is left alone.
	sentinel := map[string]int{"untouched": 1}
	if err := c.Post(ctx, "/v1/noop", nil, &sentinel); err != nil {
		t.Fatal(err)
	}
	if len(sentinel) != 1 || sentinel["untouched"] != 1 {
		t.Errorf("204 answer modified out: %v", sentinel)
	}

	fi, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != DefaultMode {
		t.Errorf("socket mode = %v, want socket with %v", fi.Mode(), DefaultMode)
	}
}

func TestErrorMapping(t *testing.T) {
	var served atomic.Int32
	_, c := serve(t, ListenOptions{}, func(s *Server) {
		h := func(err error) HandlerFunc {
			return func(*http.Request) (any, error) { served.Add(1); return nil, err }
		}
		s.Handle(http.MethodGet, "/conflict", h(Conflict(`lock "db" is held by node 3`)))
		s.Handle(http.MethodGet, "/custom", h(Errorf(http.StatusTeapot, "teapot", "short and %s", "stout")))
		s.Handle(http.MethodGet, "/plain", h(errors.New("disk on fire")))
		s.Handle(http.MethodGet, "/deadline", h(fmt.Errorf("acquire: %w", context.DeadlineExceeded)))
		s.Handle(http.MethodGet, "/wrapped", h(fmt.Errorf("outer: %w", NotFound("no lock named x"))))
		s.Handle(http.MethodGet, "/panic", func(*http.Request) (any, error) { panic("boom") })
		s.Handle(http.MethodGet, "/unencodable", func(*http.Request) (any, error) { return func() {}, nil })
		s.Handle(http.MethodPost, "/post-only", h(nil))
		s.Handle(http.MethodPut, "/post-only", h(nil))
	})
	ctx := ctxTimeout(t, hangGuard)
	tests := []struct {
		path   string
		status int
		code   string
		msg    string // substring
	}{
		{"/conflict", 409, CodeConflict, `lock "db" is held by node 3`},
		{"/custom", 418, "teapot", "short and stout"},
		{"/plain", 500, CodeInternal, "disk on fire"},
		{"/deadline", 504, CodeTimeout, "acquire: context deadline exceeded"},
		{"/wrapped", 404, CodeNotFound, "no lock named x"},
		{"/panic", 500, CodeInternal, "boom"},
		{"/unencodable", 500, CodeInternal, "encoding the answer"},
		{"/nowhere", 404, CodeNotFound, "no such endpoint: GET /nowhere"},
		{"/post-only", 405, CodeMethodNotAllowed, "/post-only does not take GET"},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.path, "/"), func(t *testing.T) {
			err := c.Get(ctx, tt.path, nil)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Get(%s) = %v (%T), want *Error", tt.path, err, err)
			}
			if e.Status != tt.status || e.Code != tt.code || !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("Get(%s) = %d %q %q, want %d %q containing %q", tt.path, e.Status, e.Code, e.Msg, tt.status, tt.code, tt.msg)
			}
			if errors.Is(err, ErrUnreachable) {
				t.Errorf("a server-side error matches ErrUnreachable")
			}
		})
	}
	// The panic did not take the server down.
	if err := c.Get(ctx, "/conflict", nil); err == nil || !strings.Contains(err.Error(), "held") {
		t.Errorf("after a panic: %v", err)
	}
}

func TestMethodNotAllowedLists(t *testing.T) {
	s, _ := serve(t, ListenOptions{}, func(s *Server) {
		s.Handle(http.MethodPost, "/x", func(*http.Request) (any, error) { return nil, nil })
	})
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.Path())
	}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://ctl/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET on a POST route: %d, Allow %q; want 405, POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q", ct)
	}
}

func TestDecodeErrors(t *testing.T) {
	s, c := serve(t, ListenOptions{MaxBodyBytes: 256}, func(s *Server) {
		s.Handle(http.MethodPost, "/v1/echo", func(r *http.Request) (any, error) {
			var in map[string]any
			if err := Decode(r, &in); err != nil {
				return nil, err
			}
			return in, nil
		})
		s.Handle(http.MethodPost, "/v1/typed", func(r *http.Request) (any, error) {
			var in struct {
				N int `json:"n"`
			}
			return in, Decode(r, &in)
		})
	})
	ctx := ctxTimeout(t, hangGuard)
	tests := []struct {
		name, path string
		body       string
		status     int
		code, msg  string
	}{
		{"empty", "/v1/echo", "", 400, CodeBadRequest, "request body is empty"},
		{"syntax", "/v1/echo", `{"a":`, 400, CodeBadRequest, "request body is not valid: unexpected EOF"},
		{"trailing", "/v1/echo", `{"a":1} {"b":2}`, 400, CodeBadRequest, "data after its JSON value"},
		{"type", "/v1/typed", `{"n":"seven"}`, 400, CodeBadRequest, "cannot unmarshal string"},
		{"too large", "/v1/echo", `{"a":"` + strings.Repeat("x", 300) + `"}`, 413, CodeTooLarge, "larger than the 256 bytes"},
		{"too large after value", "/v1/echo", `{"a":1}` + strings.Repeat(" ", 300), 413, CodeTooLarge, "larger than the 256 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := rawPost(t, s.Path(), tt.path, tt.body)
			if e.Status != tt.status || e.Code != tt.code || !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("Post = %d %q %q, want %d %q containing %q", e.Status, e.Code, e.Msg, tt.status, tt.code, tt.msg)
			}
		})
	}
	var out map[string]any
	if err := c.Post(ctx, "/v1/echo", map[string]int{"a": 1}, &out); err != nil || out["a"] != 1.0 {
		t.Errorf("valid body: %v, %v", out, err)
	}
}

func TestStaleSocketRemoved(t *testing.T) {
	path := filepath.Join(socketDir(t), "control.sock")
	// A daemon that died leaves its socket file behind.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("stale socket not left behind: %v", err)
	}
	s, err := Listen(path, ListenOptions{})
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	s.Close()
}

func TestListenRefusesNonSocket(t *testing.T) {
	path := filepath.Join(socketDir(t), "control.sock")
	if err := os.WriteFile(path, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Listen(path, ListenOptions{})
	if err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file: %v, want a 'not a socket' error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Errorf("the file was touched: %q", b)
	}
}

func TestSecondServerRefused(t *testing.T) {
	s, c := serve(t, ListenOptions{}, func(s *Server) {
		s.Handle(http.MethodGet, "/v1/ping", func(*http.Request) (any, error) { return "pong", nil })
	})
	_, err := Listen(s.Path(), ListenOptions{})
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("second Listen: %v, want ErrInUse", err)
	}
	if want := "another daemon is already serving " + s.Path(); err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	// The first server is unharmed.
	var got string
	if err := c.Get(ctxTimeout(t, hangGuard), "/v1/ping", &got); err != nil || got != "pong" {
		t.Errorf("first server after refused second: %q, %v", got, err)
	}
}

// A live socket served by something that does not take the lock (an older
// daemon, another program) is detected by dialling it.
func TestLiveForeignSocketRefused(t *testing.T) {
	path := filepath.Join(socketDir(t), "control.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Listen(path, ListenOptions{}); !errors.Is(err, ErrInUse) {
		t.Fatalf("Listen over a live socket: %v, want ErrInUse", err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("live socket removed: %v", err)
	}
}

func TestCloseRemovesSocketAndReleases(t *testing.T) {
	path := filepath.Join(socketDir(t), "control.sock")
	for i := range 2 { // the second round proves the lock was released
		s, err := Listen(path, ListenOptions{})
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		done := make(chan error, 1)
		go func() { done <- s.Serve() }()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve = %v", err)
		}
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("round %d: socket still there after Close: %v", i, err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
	// Close without Serve also cleans up.
	s, err := Listen(path, ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still there after Close without Serve: %v", err)
	}
}

func TestListenOptions(t *testing.T) {
	dir := socketDir(t)
	t.Run("parent created", func(t *testing.T) {
		path := filepath.Join(dir, "a", "b", "c.sock")
		s, err := Listen(path, ListenOptions{Mode: 0o600})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		fi, err := os.Stat(filepath.Dir(path))
		if err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("parent dir: %v %v, want 0755", fi.Mode(), err)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
			t.Errorf("socket mode %v, want 0600", fi.Mode().Perm())
		}
	})
	t.Run("path too long", func(t *testing.T) {
		_, err := Listen("/"+strings.Repeat("x", 120), ListenOptions{})
		if err == nil || !strings.Contains(err.Error(), "at most 107") {
			t.Errorf("long path: %v", err)
		}
	})
	t.Run("unknown group", func(t *testing.T) {
		_, err := Listen(filepath.Join(dir, "g.sock"), ListenOptions{Group: "no-such-group-synclab"})
		if err == nil || !strings.Contains(err.Error(), `control group "no-such-group-synclab" does not exist on this host: create it (groupadd no-such-group-synclab)`) {
			t.Errorf("unknown group: %v", err)
		}
	})
	t.Run("group", func(t *testing.T) {
		testenv.RequireRoot(t, "giving the socket to an arbitrary group needs root")
		path := filepath.Join(dir, "g.sock")
		s, err := Listen(path, ListenOptions{Group: "4242"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Gid != 4242 || st.Uid != 0 || fi.Mode().Perm() != 0o660 {
			t.Errorf("socket %d:%d %v, want 0:4242 0660", st.Uid, st.Gid, fi.Mode().Perm())
		}
	})
}

// TestGraceOnClose: Close lets a request in flight finish within the
// grace period, then cancels what still runs (503 shutting down). Neither
// half races a timer: the request that finishes is released by the test
// once Close has begun (its listener is closed) under an hour's grace, so
// it succeeds only if Close waited for it; the request that never finishes
// ends only when the grace (300 ms) does, so Close returning at all, and
// no sooner than the grace, says the grace was kept and then ended.
func TestGraceOnClose(t *testing.T) {
	t.Run("finish within the grace", func(t *testing.T) {
		started, release := make(chan struct{}), make(chan struct{})
		// No cutoff after the grace: a request that outlived it would be
		// cut off at once.
		s, c := serve(t, ListenOptions{Grace: time.Hour, cutoff: time.Nanosecond}, func(s *Server) {
			s.Handle(http.MethodGet, "/slow", func(r *http.Request) (any, error) {
				close(started)
				<-release
				return "done", nil
			})
		})
		slow := make(chan error, 1)
		var got string
		go func() { slow <- c.Get(ctxTimeout(t, hangGuard), "/slow", &got) }()
		<-started
		closed := closeAsync(s)
		// Close has begun once its listener refuses connections.
		deadline := time.Now().Add(hangGuard)
		for {
			conn, err := net.Dial("unix", s.path)
			if err != nil {
				break
			}
			conn.Close()
			if time.Now().After(deadline) {
				t.Fatalf("the listener still accepts %v after Close began", hangGuard)
			}
			time.Sleep(time.Millisecond)
		}
		close(release)
		if err := <-slow; err != nil || got != "done" {
			t.Errorf("request within the grace: %q, %v; want done", got, err)
		}
		waitClosed(t, closed)
	})
	t.Run("cancelled at the grace's end", func(t *testing.T) {
		const grace = 300 * time.Millisecond
		started := make(chan struct{})
		s, c := serve(t, ListenOptions{Grace: grace, cutoff: time.Hour}, func(s *Server) {
			s.Handle(http.MethodGet, "/forever", func(r *http.Request) (any, error) {
				close(started)
				<-r.Context().Done() // a lock acquire that never gets the lock
				return nil, r.Context().Err()
			})
		})
		forever := make(chan error, 1)
		go func() { forever <- c.Get(ctxTimeout(t, hangGuard), "/forever", nil) }()
		<-started
		t0 := time.Now()
		waitClosed(t, closeAsync(s))
		if d := time.Since(t0); d < grace {
			t.Errorf("Close returned after %v, before the %v grace", d, grace)
		}
		err := <-forever
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeUnavailable || !strings.Contains(e.Msg, "shutting down") {
			t.Errorf("request cancelled by Close: %v, want 503 shutting down", err)
		}
	})
}

// closeAsync runs s.Close and says when it returned.
func closeAsync(s *Server) <-chan struct{} {
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	return done
}

// waitClosed waits for closeAsync's Close, failing after hangGuard: far
// above any grace these tests give, far below the hours Close would take
// if it waited for what it must cancel.
func waitClosed(t *testing.T, closed <-chan struct{}) {
	t.Helper()
	select {
	case <-closed:
	case <-time.After(hangGuard):
		t.Fatalf("Close has not returned after %v", hangGuard)
	}
}

// rawPost sends body as it is (the Client only sends what it marshalled)
// and returns the error answer.
func rawPost(t *testing.T, sock, path, body string) *Error {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post("http://ctl"+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Fatalf("POST %s %q: status %d, want an error", path, body, resp.StatusCode)
	}
	_, err = readError(resp)
	return err.(*Error)
}

// The server's connections read and write with raw system calls
// (internal/rawsock): a control call wakes no runtime monitor thread.
func TestServerConnsAreRaw(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "s"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := net.Dial("unix", filepath.Join(dir, "s")); err == nil {
			defer c.Close()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	c, err := rawListener{ln}.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*rawsock.Conn); runtime.GOOS == "linux" && !ok {
		t.Fatalf("accepted a %T, want a *rawsock.Conn", c)
	}
	if _, err := peerCredentials(c); runtime.GOOS == "linux" && err != nil {
		t.Fatalf("peer credentials through the raw connection: %v", err)
	}
}
