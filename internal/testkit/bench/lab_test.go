package bench

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/testkit/labnet"
)

// benchLab builds a benchmark's lab of n hosts, under prefix when
// bench.sh gave one (so that its cleanup can find a lab a killed run
// left behind).
func benchLab(b *testing.B, n int, prefix string) *labnet.Lab {
	var opts []labnet.Option
	if prefix != "" {
		opts = append(opts, labnet.WithPrefix(prefix))
	}
	return labnet.New(b, n, opts...)
}

// etcdBinaries finds etcd and etcdctl, the reference a lab benchmark
// measures beside synclab's daemon, or skips the benchmark saying how to
// get them (scripts/bench.sh what installs them).
func etcdBinaries(b *testing.B, what string) (etcd, etcdctl string) {
	etcd, err1 := exec.LookPath("etcd")
	etcdctl, err2 := exec.LookPath("etcdctl")
	if err := errors.Join(err1, err2); err != nil {
		b.Skipf("etcd is the reference: install Debian's etcd-server and etcd-client (scripts/bench.sh %s does, without starting the service): %v", what, err)
	}
	return etcd, etcdctl
}

// loadAverage is the machine's 1, 5 and 15 minute load averages, for the
// notes under a table: figures taken on a busy machine say so.
func loadAverage() string {
	load, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(load)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// terminate stops a daemon as systemd would, with SIGTERM, and kills it if
// it has not exited within 5 s.
func terminate(p *labnet.Proc) {
	if err := p.Signal(syscall.SIGTERM); err == nil {
		if _, err := p.Wait(5 * time.Second); err != nil {
			p.Kill()
		}
	}
}

// keyArgs gives a benchmark's daemons the cluster key in dir (made once,
// with the binaries' own keygen): synclab is measured as it runs by
// default, authenticated.
func keyArgs(tb testing.TB, dir string) []string {
	tb.Helper()
	path := filepath.Join(dir, "cluster.key")
	if _, err := os.Stat(path); err != nil {
		if _, err := app.WriteNewKeyFile(path, false); err != nil {
			tb.Fatal(err)
		}
	}
	return []string{"--key-file", path}
}
