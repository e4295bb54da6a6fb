package ctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestClientUnreachable(t *testing.T) {
	dir := socketDir(t)
	ctx := ctxTimeout(t, 5*time.Second)

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
	err = NewClient(path, "timed").Get(ctxTimeout(t, 5*time.Second), "/v1/status", nil)
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
