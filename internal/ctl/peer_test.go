package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/testenv"
)

func TestAllowed(t *testing.T) {
	const self, gid = 998, 4242
	withGroup := policy{self: self, gid: gid, group: "synclab"}
	noGroup := policy{self: self}
	tests := []struct {
		name string
		pol  policy
		peer Peer
		want bool
	}{
		{"root", noGroup, Peer{UID: 0, GID: 0}, true},
		{"root with group policy", withGroup, Peer{UID: 0, GID: 100}, true},
		{"daemon's own user", noGroup, Peer{UID: self, GID: 5}, true},
		{"stranger, no group configured", noGroup, Peer{UID: 1000, GID: gid, Groups: []uint32{gid}}, false},
		{"stranger", withGroup, Peer{UID: 1000, GID: 1000, Groups: []uint32{24, 27}}, false},
		{"member by primary group", withGroup, Peer{UID: 1000, GID: gid}, true},
		{"member by supplementary group", withGroup, Peer{UID: 1000, GID: 1000, Groups: []uint32{24, gid}}, true},
		{"groups unknown (old kernel), primary differs", withGroup, Peer{UID: 1000, GID: 1000, Groups: nil}, false},
		{"configured gid 0 is a real group", policy{self: self, gid: 0, group: "root"}, Peer{UID: 1000, GID: 1000, Groups: []uint32{0}}, true},
	}
	for _, tt := range tests {
		if got := tt.pol.allowed(tt.peer); got != tt.want {
			t.Errorf("%s: allowed(%+v) = %v, want %v", tt.name, tt.peer, got, tt.want)
		}
	}
	msg := withGroup.refusal(Peer{UID: 1000, PID: 77})
	if want := "uid 1000 (pid 77) may not use this control socket: only root and uid 998 and members of group synclab (gid 4242) may"; msg != want {
		t.Errorf("refusal:\n got %s\nwant %s", msg, want)
	}
}

// Helper mode: the test binary re-executed as another user acts as a CLI.
const helperEnv = "CTL_TEST_PEER_HELPER"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		runHelper(path)
		return
	}
	os.Exit(m.Run())
}

type helperResult struct {
	Kind string `json:"kind"` // ok, unreachable, permission, other
	Msg  string `json:"msg"`
	UID  int    `json:"uid"`
}

func runHelper(path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out string
	err := NewClient(path, "timed").Get(ctx, "/v1/ping", &out)
	res := helperResult{Kind: "ok", Msg: out, UID: os.Getuid()}
	switch {
	case err == nil:
	case errors.Is(err, ErrPermission):
		res = helperResult{Kind: "permission", Msg: err.Error(), UID: os.Getuid()}
	case errors.Is(err, ErrUnreachable):
		res = helperResult{Kind: "unreachable", Msg: err.Error(), UID: os.Getuid()}
	default:
		res = helperResult{Kind: "other", Msg: err.Error(), UID: os.Getuid()}
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

// TestPeerCredentials runs real clients under other uids against a real
// socket, so SO_PEERCRED and SO_PEERGROUPS are what decides.
func TestPeerCredentials(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peer credentials are Linux-only")
	}
	testenv.RequireRoot(t, "running clients under other uids needs root")
	const nobody, group = 65534, 4242
	dir := socketDir(t)
	// The helper runs as nobody: it needs a copy of the test binary it can
	// execute and a directory it can traverse.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "ctl.test")
	copyFile(t, self, bin, 0o755)

	start := func(opts ListenOptions, name string) string {
		path := filepath.Join(dir, name)
		opts.Logger = quiet
		s, err := Listen(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		s.Handle(http.MethodGet, "/v1/ping", func(*http.Request) (any, error) { return "pong", nil })
		go s.Serve()
		t.Cleanup(func() { s.Close() })
		return path
	}
	run := func(path string, groups []uint32) helperResult {
		t.Helper()
		cmd := exec.Command(bin)
		cmd.Env = []string{helperEnv + "=" + path}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: groups}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("helper: %v (output %q)", err, out)
		}
		var res helperResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("helper output %q: %v", out, err)
		}
		if res.UID != nobody {
			t.Fatalf("helper ran as uid %d, want %d", res.UID, nobody)
		}
		return res
	}

	// 0666 lets every connect through, so the daemon's check is what is
	// exercised.
	open := start(ListenOptions{Mode: 0o666, Group: fmt.Sprint(group)}, "open.sock")
	if res := run(open, nil); res.Kind != "permission" || !strings.Contains(res.Msg, "uid 65534") {
		t.Errorf("stranger: %+v, want refused by the daemon with its uid named", res)
	}
	if res := run(open, []uint32{group}); res.Kind != "ok" || res.Msg != "pong" {
		t.Errorf("member by supplementary group: %+v, want pong", res)
	}
	noGroup := start(ListenOptions{Mode: 0o666}, "nogroup.sock")
	if res := run(noGroup, []uint32{group}); res.Kind != "permission" {
		t.Errorf("no group configured: %+v, want refused", res)
	}

	// The default 0660 root-owned socket: the kernel refuses the connect.
	closed := start(ListenOptions{}, "closed.sock")
	res := run(closed, nil)
	if res.Kind != "permission" || !strings.Contains(res.Msg, "permission denied on the control socket") ||
		!strings.Contains(res.Msg, "TIMED_CONTROL_GROUP") {
		t.Errorf("0660 socket: %+v, want EACCES with the group advice", res)
	}
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
