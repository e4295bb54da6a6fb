package packagetest

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/testenv"
)

const (
	repo   = "../../.."
	guard  = "/usr/sbin/policy-rc.d"
	keyDir = "/etc/synclab"
	key    = keyDir + "/cluster.key"
)

// require checks what the test needs: what it cannot have here ends it
// with the reason (testenv: a skip, or a failure under CI=true, which
// must run it); -short is a skip.
func require(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("package test skipped: Debian packages are for Linux (this is %s)", runtime.GOOS)
	}
	if testing.Short() {
		t.Skip("package test skipped with -short: it builds the package and installs it (about a minute)")
	}
	testenv.RequireRoot(t, "the package test installs and purges the package with dpkg")
	for _, tool := range []string{"dpkg", "dpkg-deb", "dpkg-query", "systemd-analyze", "lintian", "go", "git", "gzip", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Unavailable(t, "%s not found (scripts/install-test-deps.sh installs lintian; dpkg and systemd come with Debian)", tool)
		}
	}
	if a := runtime.GOARCH; a != "amd64" && a != "arm64" {
		testenv.Unavailable(t, "scripts/package.sh builds for amd64 and arm64, not %s", a)
	}
}

// expected is what the package must hold, read from the checkout: every
// command of cmd/, every unit and example of systemd/.
type expected struct {
	cmds      []string // timed, mutexd, ...
	units     []string // timed.service, ...
	services  []string // the units that are services
	defaults  []string // /etc/default/X, from systemd/X.env.example
	statedirs []string // StateDirectory= of the units
}

func expect(t *testing.T) expected {
	t.Helper()
	var e expected
	dirs, err := os.ReadDir(filepath.Join(repo, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() {
			e.cmds = append(e.cmds, d.Name())
		}
	}
	files, err := os.ReadDir(filepath.Join(repo, "systemd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		n := f.Name()
		switch {
		case slices.Contains([]string{".service", ".socket", ".timer", ".target", ".path"}, filepath.Ext(n)):
			e.units = append(e.units, n)
			if filepath.Ext(n) == ".service" {
				e.services = append(e.services, n)
			}
			b, err := os.ReadFile(filepath.Join(repo, "systemd", n))
			if err != nil {
				t.Fatal(err)
			}
			for line := range strings.Lines(string(b)) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "StateDirectory="); ok {
					e.statedirs = append(e.statedirs, strings.Fields(v)...)
				}
			}
		case strings.HasSuffix(n, ".env.example"):
			e.defaults = append(e.defaults, "/etc/default/"+strings.TrimSuffix(n, ".env.example"))
		}
	}
	if len(e.cmds) == 0 || len(e.services) == 0 || len(e.defaults) == 0 {
		t.Fatalf("the checkout has no commands, units or examples: %+v", e)
	}
	return e
}

// files lists what the package installs that is not a directory.
func (e expected) files() []string {
	var out []string
	for _, c := range e.cmds {
		out = append(out, "/usr/bin/"+c, "/usr/share/man/man8/"+c+".8.gz",
			"/usr/share/bash-completion/completions/"+c, "/usr/share/zsh/vendor-completions/_"+c)
	}
	for _, u := range e.units {
		out = append(out, "/lib/systemd/system/"+u)
	}
	out = append(out, e.defaults...)
	return append(out, "/usr/share/doc/synclab/copyright", "/usr/share/doc/synclab/changelog.gz",
		"/usr/share/doc/synclab/README.md", "/usr/share/lintian/overrides/synclab")
}

func (e expected) state() []string {
	var out []string
	for _, d := range e.statedirs {
		out = append(out, "/var/lib/"+d, "/var/lib/private/"+d)
	}
	return out
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// hostClear refuses a host where the package is installed or where any
// file it would install, replace or purge is already there: the test
// would install over an administrator's files and purge them after.
func hostClear(t *testing.T, e expected, listed []string) {
	t.Helper()
	if s := status(t); s != "" && !strings.Contains(s, "not-installed") {
		testenv.Unavailable(t, "a synclab package is on this host (%s): the test would replace and purge it", s)
	}
	for _, p := range slices.Concat(listed, e.state(), []string{key}) {
		if exists(p) {
			testenv.Unavailable(t, "%s exists on this host: the test would install over it and purge it", p)
		}
	}
}

// excluded says whether dpkg is told not to install path (path-exclude in
// /etc/dpkg/dpkg.cfg.d, as minimal container images do for documentation).
var excluded = func() func(string) bool {
	var patterns, includes []string
	cfgs, _ := filepath.Glob("/etc/dpkg/dpkg.cfg.d/*")
	for _, c := range append(cfgs, "/etc/dpkg/dpkg.cfg") {
		f, err := os.Open(c)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) == 2 && fields[0] == "path-exclude" {
				patterns = append(patterns, strings.TrimPrefix(fields[1], "="))
			}
			if len(fields) == 2 && fields[0] == "path-include" {
				includes = append(includes, strings.TrimPrefix(fields[1], "="))
			}
		}
		f.Close()
	}
	match := func(ps []string, p string) bool {
		for _, pat := range ps {
			if ok, _ := filepath.Match(pat, p); ok {
				return true
			}
			if strings.HasSuffix(pat, "/*") && strings.HasPrefix(p, strings.TrimSuffix(pat, "*")) {
				return true
			}
		}
		return false
	}
	return func(p string) bool { return match(patterns, p) && !match(includes, p) }
}()

func run(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := run(t, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// dpkg runs dpkg, waiting (up to a minute) for another dpkg or apt on
// this host to let go of its lock.
func dpkg(t *testing.T, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := run(t, "dpkg", args...)
		if err == nil {
			return out
		}
		if !strings.Contains(out, "lock") || time.Now().After(deadline) {
			t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		time.Sleep(2 * time.Second)
	}
}

// status is dpkg's status of the package, "" when dpkg does not know it.
func status(t *testing.T) string {
	out, _ := exec.Command("dpkg-query", "-W", "-f=${Status}", "synclab").Output()
	return strings.TrimSpace(string(out))
}

// TestDebianPackage builds, inspects, lints, installs, verifies, removes
// and purges the package.
func TestDebianPackage(t *testing.T) {
	require(t)
	e := expect(t)
	hostClear(t, e, e.files())

	out := t.TempDir()
	start := time.Now()
	log, err := run(t, "bash", filepath.Join(repo, "scripts", "package.sh"), "--arch", runtime.GOARCH, "--out", out)
	t.Logf("scripts/package.sh --arch %s (%.0f s):\n%s", runtime.GOARCH, time.Since(start).Seconds(), log)
	if err != nil {
		t.Fatalf("scripts/package.sh: %v", err)
	}
	debs, _ := filepath.Glob(filepath.Join(out, "*.deb"))
	if len(debs) != 1 {
		t.Fatalf("scripts/package.sh made %q, want one .deb", debs)
	}
	deb := debs[0]

	// What the package says and holds.
	fields := mustRun(t, "dpkg-deb", "-f", deb, "Package", "Version", "Architecture")
	version := field(fields, "Version")
	if field(fields, "Package") != "synclab" || field(fields, "Architecture") != runtime.GOARCH || version == "" {
		t.Fatalf("control fields:\n%s", fields)
	}
	if filepath.Base(deb) != "synclab_"+version+"_"+runtime.GOARCH+".deb" {
		t.Errorf("file name %s does not say the version %s", filepath.Base(deb), version)
	}
	listing := mustRun(t, "dpkg-deb", "-c", deb)
	var inPackage []string
	for line := range strings.Lines(listing) {
		f := strings.Fields(line)
		if len(f) >= 6 && !strings.HasPrefix(f[0], "d") {
			inPackage = append(inPackage, strings.TrimPrefix(f[5], "."))
		}
		if len(f) >= 2 && f[1] != "root/root" {
			t.Errorf("not owned by root: %s", strings.TrimSpace(line))
		}
	}
	for _, p := range e.files() {
		if !slices.Contains(inPackage, p) {
			t.Errorf("the package lacks %s", p)
		}
	}
	// Every file it installs, not only those this test names, must be
	// clear on the host (a doc page added later, say).
	hostClear(t, e, inPackage)
	conffiles := strings.Fields(mustRun(t, "dpkg-deb", "-I", deb, "conffiles"))
	if want := slices.Sorted(slices.Values(e.defaults)); !slices.Equal(slices.Sorted(slices.Values(conffiles)), want) {
		t.Errorf("conffiles %q, want %q", conffiles, want)
	}

	// lintian: no error or warning (the remaining ones are overridden, each
	// with its reason, in packaging/deb/lintian-overrides).
	lint, err := run(t, "lintian", "--fail-on", "error,warning", "--display-info", deb)
	t.Logf("lintian:\n%s", lint)
	if err != nil {
		t.Errorf("lintian found errors or warnings: %v", err)
	}

	// Install, with services forbidden to start, and clean up whatever
	// happens next.
	if !exists(guard) {
		if err := os.WriteFile(guard, []byte("#!/bin/sh\n# synclab package test: never start services\nexit 101\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(guard) })
	}
	t.Cleanup(func() {
		if s := status(t); s != "" && !strings.Contains(s, "not-installed") {
			if out, err := run(t, "dpkg", "--purge", "synclab"); err != nil {
				t.Errorf("cleanup: dpkg --purge synclab: %v\n%s", err, out)
			}
		}
		for _, p := range append(e.state(), key) {
			os.RemoveAll(p)
		}
		os.Remove(keyDir)
	})
	inst := dpkg(t, "-i", deb)
	t.Logf("dpkg -i:\n%s", inst)
	if s := status(t); s != "install ok installed" {
		t.Fatalf("after dpkg -i the package is %q", s)
	}
	for _, want := range []string{"timed keygen", "scp -p " + key, "nothing was started or enabled"} {
		if !strings.Contains(inst, want) {
			t.Errorf("dpkg -i did not tell the administrator %q", want)
		}
	}

	t.Run("installed", func(t *testing.T) {
		for _, p := range inPackage {
			if excluded(p) {
				t.Logf("%s: excluded by dpkg's path-exclude here, not checked", p)
				continue
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Errorf("installed: %v", err)
				continue
			}
			want := fs.FileMode(0o644)
			if strings.HasPrefix(p, "/usr/bin/") {
				want = 0o755
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
			}
		}
		for _, d := range e.defaults {
			have, _ := os.ReadFile(d)
			src, _ := os.ReadFile(filepath.Join(repo, "systemd", filepath.Base(d)+".env.example"))
			if string(have) != string(src) {
				t.Errorf("%s is not systemd/%s.env.example", d, filepath.Base(d))
			}
		}
		if fi, err := os.Stat(keyDir); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", keyDir, err)
		}
		if exists(key) {
			t.Errorf("installing made a key, %s: a lab needs one key, made on its first machine", key)
		}
		for _, s := range e.services {
			if links, _ := filepath.Glob("/etc/systemd/system/*.wants/" + s); len(links) > 0 {
				t.Errorf("installing enabled %s: %q", s, links)
			}
			if exists("/run/systemd/system") {
				if out, _ := run(t, "systemctl", "is-active", s); strings.TrimSpace(out) == "active" {
					t.Errorf("installing started %s", s)
				}
			}
		}
		for _, c := range e.cmds {
			if excluded("/usr/share/man/man8/" + c + ".8.gz") {
				continue
			}
			page := mustRun(t, "sh", "-c", "gzip -dc /usr/share/man/man8/"+c+".8.gz")
			if !strings.HasPrefix(page, ".TH "+strings.ToUpper(c)+" 8 ") || !strings.Contains(page, ".SH EXAMPLES") || !strings.Contains(page, `"synclab `+version+`"`) {
				t.Errorf("%s.8.gz is not %s's page of this version", c, c)
			}
		}
	})

	t.Run("units", func(t *testing.T) {
		man := "--man=no"
		if _, err := exec.LookPath("man"); err == nil && !excluded("/usr/share/man/man8/timed.8.gz") {
			man = "--man=yes" // Documentation=man:X(8) must resolve
		}
		for _, u := range e.units {
			p := "/lib/systemd/system/" + u
			b, err := os.ReadFile(p)
			if err != nil {
				t.Error(err)
				continue
			}
			if strings.Contains(string(b), "/usr/local/") {
				t.Errorf("%s still names /usr/local/", p)
			}
			if strings.HasSuffix(u, ".service") && !strings.Contains(string(b), "\nExecStart=/usr/bin/") {
				t.Errorf("%s: ExecStart is not in /usr/bin", p)
			}
			out, err := run(t, "systemd-analyze", "verify", man, p)
			if err != nil {
				t.Errorf("systemd-analyze verify %s %s: %v\n%s", man, p, err, out)
			}
			for line := range strings.Lines(out) {
				if strings.Contains(line, u) {
					t.Errorf("systemd-analyze verify %s: %s", u, strings.TrimSpace(line))
				}
			}
		}
	})

	t.Run("version", func(t *testing.T) {
		out := mustRun(t, "/usr/bin/timed", "--version")
		commit := strings.TrimSpace(mustRun(t, "git", "-C", repo, "rev-parse", "HEAD"))
		if !strings.HasPrefix(out, "timed "+version+" (commit "+commit) {
			t.Errorf("timed --version: %q, want version %s and commit %s", out, version, commit)
		}
	})

	// The administrator's day: the key made on this (first) machine, a
	// setting changed, state written by a run.
	mustRun(t, "/usr/bin/timed", "keygen")
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("timed keygen: %v, mode %v", err, fi)
	}
	edited := e.defaults[0]
	f, err := os.OpenFile(edited, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "# edited by the administrator")
	f.Close()
	d := e.statedirs[0]
	if err := os.MkdirAll("/var/lib/private/"+d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("/var/lib/private/"+d+"/core.state", []byte("state"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("private/"+d, "/var/lib/"+d); err != nil {
		t.Fatal(err)
	}

	t.Run("remove", func(t *testing.T) {
		dpkg(t, "--remove", "synclab")
		if s := status(t); s != "deinstall ok config-files" {
			t.Errorf("after dpkg --remove the package is %q, want its configuration kept", s)
		}
		for _, p := range inPackage {
			if slices.Contains(conffiles, p) {
				if !exists(p) {
					t.Errorf("remove took the configuration %s", p)
				}
			} else if exists(p) {
				t.Errorf("remove left %s", p)
			}
		}
		if b, _ := os.ReadFile(edited); !strings.Contains(string(b), "edited by the administrator") {
			t.Errorf("remove lost the administrator's edit of %s", edited)
		}
		for _, p := range []string{key, "/var/lib/private/" + d + "/core.state", "/var/lib/" + d} {
			if !exists(p) {
				t.Errorf("remove took %s", p)
			}
		}
	})

	t.Run("purge", func(t *testing.T) {
		dpkg(t, "--purge", "synclab")
		if s := status(t); s != "" && !strings.Contains(s, "not-installed") {
			t.Errorf("after dpkg --purge the package is %q", s)
		}
		for _, p := range slices.Concat(inPackage, e.state(), []string{key, keyDir}) {
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("purge left %s (%v)", p, err)
			}
		}
	})
}

// field returns a control field from dpkg-deb -f's output.
func field(out, name string) string {
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
