package ctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/rawsock"
)

func TestClientUnreachable(t *testing.T) {
	dir := socketDir(t)
	ctx := ctxTimeout(t, hangGuard)

	missing := filepath.Join(dir, "missing.sock")
	err := NewClient(missing, "timed").Get(ctx, "/v1/status", nil)
	want := `cannot reach the daemon at ` + missing + `: no such socket (is "timed run" running? use --control PATH to pick another daemon)`
	if err == nil || err.Error() != want {
		t.Errorf("missing socket:\n got %v\nwant %s", err, want)
	}
	if !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrPermission) {
		t.Errorf("missing socket: Is(ErrUnreachable)=%v Is(ErrPermission)=%v", errors.Is(err, ErrUnreachable), errors.Is(err, ErrPermission))
	}
	if !errors.Is(err, syscall.ENOENT) {
		t.Errorf("the errno is not reachable through Unwrap: %v", err)
	}

	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	err = NewClient(stale, "mutexd").Post(ctx, "/v1/locks/x", nil, nil)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "nobody is listening") ||
		!strings.Contains(err.Error(), `"mutexd run"`) {
		t.Errorf("stale socket: %v", err)
	}

	notSock := filepath.Join(dir, "file")
	os.WriteFile(notSock, nil, 0o644)
	err = NewClient(notSock, "").Get(ctx, "/", nil)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "is the daemon running?") {
		t.Errorf("regular file: %v", err)
	}
}

func TestConnectErrorMessages(t *testing.T) {
	tests := []struct {
		err        *ConnectError
		want       string
		permission bool
	}{
		{
			&ConnectError{Path: "/run/timed/control.sock", Daemon: "timed", Op: "connect", Err: syscall.EACCES},
			`permission denied on the control socket /run/timed/control.sock: run as root or as a member of the group named by "timed run --control-group" (TIMED_CONTROL_GROUP)`,
			true,
		},
		{
			&ConnectError{Path: "/s", Op: "connect", Err: syscall.EPERM},
			`permission denied on the control socket /s: run as root or as a member of the daemon's control group (its --control-group flag)`,
			true,
		},
		{
			&ConnectError{Path: "/s", Daemon: "electd", Op: "read", Err: fmt.Errorf("read unix ->/s: %w", syscall.ECONNRESET)},
			`cannot reach the daemon at /s: the daemon closed the connection (connection reset by peer) (is "electd run" running? use --control PATH to pick another daemon)`,
			false,
		},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("message:\n got %s\nwant %s", got, tt.want)
		}
		if errors.Is(tt.err, ErrPermission) != tt.permission || errors.Is(tt.err, ErrUnreachable) == tt.permission {
			t.Errorf("%v: Is(ErrPermission) = %v, want %v", tt.err.Err, !tt.permission, tt.permission)
		}
	}
	if !errors.Is(&Error{Status: http.StatusForbidden, Code: CodeForbidden}, ErrPermission) {
		t.Error("a 403 from the daemon does not match ErrPermission")
	}
	if errors.Is(&Error{Status: http.StatusConflict}, ErrPermission) {
		t.Error("a 409 matches ErrPermission")
	}
}

func TestClientContextDeadline(t *testing.T) {
	_, c := serve(t, ListenOptions{}, func(s *Server) {
		s.Handle(http.MethodPost, "/v1/lock", func(r *http.Request) (any, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := c.Post(ctx, "/v1/lock", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnreachable) {
		t.Errorf("Post past its deadline = %v, want DeadlineExceeded (not unreachable)", err)
	}
}

func TestClientForeignErrorBody(t *testing.T) {
	// Something that is not a ctl server answers with net/http's text.
	path := filepath.Join(socketDir(t), "foreign.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler()}
	go srv.Serve(ln)
	defer srv.Close()
	err = NewClient(path, "timed").Get(ctxTimeout(t, hangGuard), "/v1/status", nil)
	var e *Error
	if !errors.As(err, &e) || e.Status != 404 || e.Code != CodeNotFound || !strings.Contains(e.Msg, "404 page not found") {
		t.Errorf("foreign 404: %#v", err)
	}
}

func TestClientBadPath(t *testing.T) {
	if err := NewClient("/nowhere", "").Get(context.Background(), "v1/status", nil); err == nil || !strings.Contains(err.Error(), "must start with /") {
		t.Errorf("relative path: %v", err)
	}
}

// connServer serves /v1/echo/{name} (GET and POST: the name and the body's
// "n"), /v1/none (204), /v1/fail (409) and /v1/block (until the client
// leaves).
func connServer(t *testing.T) (*Server, *Client) {
	return serve(t, ListenOptions{}, func(s *Server) {
		echo := func(r *http.Request) (any, error) {
			var in struct {
				N int `json:"n"`
			}
			if r.Method == http.MethodPost {
				if err := Decode(r, &in); err != nil {
					return nil, err
				}
			}
			return map[string]any{"name": r.PathValue("name"), "n": in.N}, nil
		}
		s.Handle(http.MethodGet, "/v1/echo/{name}", echo)
		s.Handle(http.MethodPost, "/v1/echo/{name}", echo)
		s.Handle(http.MethodPost, "/v1/none", func(*http.Request) (any, error) { return nil, nil })
		s.Handle(http.MethodPost, "/v1/fail", func(*http.Request) (any, error) { return nil, Conflict("taken") })
		s.Handle(http.MethodPost, "/v1/block", func(r *http.Request) (any, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
	})
}

func (c *Client) dialled() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dials
}

// A client keeps its connection across calls of every kind, answers with
// a body, without one, and errors alike: a CLI's acquire, renew and
// release, or a benchmark's thousands of calls, pay one connect.
func TestClientReusesOneConnection(t *testing.T) {
	_, c := connServer(t)
	ctx := ctxTimeout(t, hangGuard)
	for i := range 20 {
		var out struct {
			Name string `json:"name"`
			N    int    `json:"n"`
		}
		if err := c.Post(ctx, "/v1/echo/a b", map[string]int{"n": i}, &out); err != nil || out.Name != "a b" || out.N != i {
			t.Fatalf("POST %d: %+v, %v (want the name with its space, and n)", i, out, err)
		}
		if err := c.Get(ctx, "/v1/echo/x", &out); err != nil || out.Name != "x" {
			t.Fatalf("GET %d: %+v, %v", i, out, err)
		}
		if err := c.Post(ctx, "/v1/none", nil, &out); err != nil {
			t.Fatalf("204 %d: %v", i, err)
		}
		var e *Error
		if err := c.Post(ctx, "/v1/fail", struct{}{}, nil); !errors.As(err, &e) || e.Code != CodeConflict || e.Msg != "taken" {
			t.Fatalf("409 %d: %v", i, err)
		}
		if err := c.Get(ctx, "/v1/missing", nil); !errors.As(err, &e) || e.Status != http.StatusNotFound {
			t.Fatalf("404 %d: %v", i, err)
		}
	}
	if n := c.dialled(); n != 1 {
		t.Errorf("100 calls opened %d connections, want 1", n)
	}
	if err := c.Get(ctx, "/v1/echo/x\r\nX-Injected: 1", nil); err == nil {
		t.Errorf("a path with a line break was sent")
	}
}

// A call runs on its caller's goroutine: the client starts none, and a
// kept connection holds none (net/http's transport runs a reader and a
// writer goroutine per connection and hands every call through them,
// which made a local call cost twice what it does).
func TestClientStartsNoGoroutine(t *testing.T) {
	_, c := connServer(t)
	ctx := ctxTimeout(t, hangGuard)
	if err := c.Get(ctx, "/v1/echo/warm", nil); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	for range 50 {
		if err := c.Post(ctx, "/v1/echo/x", map[string]int{"n": 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if strings.Contains(stacks, "net/http.(*persistConn)") {
		t.Errorf("a transport goroutine serves the client's connection:\n%s", stacks)
	}
	// The server's goroutines come and go with its requests: allow them.
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Errorf("goroutines %d after 50 calls, %d before", after, before)
	}
}

// A kept connection the daemon closed (it restarted) is not used: the
// next call, a POST the client must not send twice, reaches the new
// daemon on a new connection.
func TestClientDaemonRestarted(t *testing.T) {
	s, c := connServer(t)
	ctx := ctxTimeout(t, hangGuard)
	if err := c.Post(ctx, "/v1/echo/one", map[string]int{"n": 1}, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := Listen(s.Path(), ListenOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	s2.Handle(http.MethodPost, "/v1/echo/{name}", func(r *http.Request) (any, error) { return map[string]string{"name": r.PathValue("name")}, nil })
	go s2.Serve()
	var out struct {
		Name string `json:"name"`
	}
	if err := c.Post(ctx, "/v1/echo/two", map[string]int{"n": 2}, &out); err != nil || out.Name != "two" {
		t.Fatalf("POST after the daemon restarted: %+v, %v", out, err)
	}
	if n := c.dialled(); n != 2 {
		t.Errorf("%d connections, want 2 (one per daemon)", n)
	}
}

// A call its context ended leaves its connection behind (an answer may
// still be on its way on it): the next call opens another, and works.
func TestClientCancelledCallDropsConnection(t *testing.T) {
	_, c := connServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Post(ctx, "/v1/block", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("blocked call: %v, want DeadlineExceeded", err)
	}
	var out struct {
		Name string `json:"name"`
	}
	if err := c.Get(ctxTimeout(t, hangGuard), "/v1/echo/after", &out); err != nil || out.Name != "after" {
		t.Fatalf("call after a cancelled one: %+v, %v", out, err)
	}
	if n := c.dialled(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// A body far over the daemon's limit: the daemon answers 413 and stops
// reading before the client has written it all; the client reports that
// answer, not a broken connection.
func TestClientBodyOverTheLimit(t *testing.T) {
	_, c := serve(t, ListenOptions{MaxBodyBytes: 1 << 10}, func(s *Server) {
		s.Handle(http.MethodPost, "/v1/echo", func(r *http.Request) (any, error) {
			var v any
			return v, Decode(r, &v)
		})
	})
	ctx := ctxTimeout(t, hangGuard)
	err := c.Post(ctx, "/v1/echo", map[string]string{"a": strings.Repeat("x", 4<<20)}, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeTooLarge {
		t.Fatalf("4 MiB body: %v, want the daemon's 413", err)
	}
	if err := c.Post(ctx, "/v1/echo", map[string]string{"a": "b"}, nil); err != nil {
		t.Fatalf("the next call: %v", err)
	}
}

// idleOpen sees through the client's raw connections (internal/rawsock):
// open while the daemon keeps its end, closed once it dropped it.
func TestIdleOpenRawConn(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("idleOpen peeks only on Linux")
	}
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	uc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c := rawsock.Wrap(uc)
	defer c.Close()
	if _, ok := c.(*rawsock.Conn); !ok {
		t.Fatalf("Wrap gave a %T", c)
	}
	s := <-accepted
	if !idleOpen(c) {
		t.Fatal("an open idle connection was taken for closed")
	}
	s.Close()
	deadline := time.Now().Add(5 * time.Second)
	for idleOpen(c) {
		if time.Now().After(deadline) {
			t.Fatal("a connection the daemon closed was taken for open")
		}
		time.Sleep(time.Millisecond)
	}
}
