package installtest

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

var daemons = []string{"timed", "mutexd", "electd", "orderd"}

const script = "../../../scripts/install.sh"

// TestMain reads the script once: bash opens it, not the test binary, and
// go test caches a result only against the files the binary opened itself.
func TestMain(m *testing.M) {
	if _, err := os.ReadFile(script); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// stubBins writes stand-ins for the four binaries: enough of `X man`,
// `X completion` and `X keygen` for the installer, with no build. Their output is fixed,
// as the real binaries' is.
func stubBins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range daemons {
		stub := fmt.Sprintf(`#!/bin/sh
case "$1" in
man) echo '.TH %[1]s 8' ;;
completion) echo "# $2 completion for %[1]s" ;;
keygen) mkdir -p "$(dirname "$2")" && (umask 077 && echo "1 hex:%[1]s-stub-key" > "$2") ;;
*) exit 2 ;;
esac
`, d)
		if err := os.WriteFile(filepath.Join(dir, d), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// run runs install.sh and returns its output and exit code. Every call
// passes --dest: nothing here may touch the host.
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	if !slices.ContainsFunc(args, func(a string) bool { return a == "--dest" || strings.HasPrefix(a, "--dest=") }) {
		t.Fatalf("install.sh %q without --dest would install on this host", args)
	}
	out, err := exec.Command("bash", append([]string{script}, args...)...).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, code := run(t, args...)
	if code != 0 {
		t.Fatalf("install.sh %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// file is what a test knows of an installed file.
type file struct {
	mode  fs.FileMode
	inode uint64
	mtime int64
}

// tree lists the regular files under root (paths relative to it).
func tree(t *testing.T, root string) map[string]file {
	t.Helper()
	files := map[string]file{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		st := fi.Sys().(*syscall.Stat_t)
		files["/"+rel] = file{mode: fi.Mode(), inode: st.Ino, mtime: fi.ModTime().UnixNano()}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return files
}

// keyFile is the cluster key, which install never makes: a lab needs one,
// made on its first machine and copied to the others.
const keyFile = "/etc/synclab/cluster.key"

// expected is every file install puts on a host for daemons ds, with its
// mode (no key among them).
func expected(prefix string, ds ...string) map[string]fs.FileMode {
	want := map[string]fs.FileMode{
		// What the four share: the lab file's example (never the lab file
		// itself), what this machine says to all of them.
		prefix + "/share/doc/synclab/lab.toml.example":    0o644,
		prefix + "/share/doc/synclab/synclab.env.example": 0o644,
		"/etc/default/synclab":                            0o644,
	}
	for _, d := range ds {
		if d == "timed" {
			want["/etc/systemd/system/timed-wait.service"] = 0o644
		}
		want[prefix+"/bin/"+d] = 0o755
		want["/etc/systemd/system/"+d+".service"] = 0o644
		want["/etc/default/"+d] = 0o644
		want[prefix+"/share/doc/synclab/"+d+".env.example"] = 0o644
		want[prefix+"/share/man/man8/"+d+".8"] = 0o644
		want[prefix+"/share/bash-completion/completions/"+d] = 0o644
		want[prefix+"/share/zsh/site-functions/_"+d] = 0o644
	}
	return want
}

func checkTree(t *testing.T, root string, want map[string]fs.FileMode) map[string]file {
	t.Helper()
	got := tree(t, root)
	for p, m := range want {
		if f, ok := got[p]; !ok {
			t.Errorf("%s not installed", p)
		} else if f.mode != m {
			t.Errorf("%s: mode %v, want %v", p, f.mode, m)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: not expected", p)
		}
	}
	return got
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInstallTwiceKeepConfigUninstall(t *testing.T) {
	bins := stubBins(t)
	dest := t.TempDir()
	out := mustRun(t, "--dest", dest, "--bin-dir", bins)
	if !strings.Contains(out, "Installed 32 files (0 up to date)") {
		t.Errorf("first install:\n%s", out)
	}
	for _, want := range []string{
		"systemctl daemon-reload && systemctl enable --now timed mutexd electd orderd\n",
		"systemctl enable timed-wait",
		"Describe the lab once, in /etc/synclab/lab.toml (the example: /usr/local/share/doc/synclab/lab.toml.example)",
		"scp -p /etc/synclab/lab.toml /etc/synclab/cluster.key HOST:/etc/synclab/",
		"/etc/default/timed /etc/default/mutexd /etc/default/electd /etc/default/orderd /etc/default/synclab: every line commented out",
		"No cluster key here yet (" + keyFile + "): the units do not start without it.",
		"On the FIRST machine of the lab only: timed keygen (it writes " + keyFile + ", mode 0600);",
		"then copy that one file to every other machine: scp -p " + keyFile + " root@HOST:" + keyFile,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("first install does not say %q:\n%s", want, out)
		}
	}
	first := checkTree(t, dest, expected("/usr/local", daemons...))
	for _, d := range daemons {
		// With the default prefix the unit is the repository's, unchanged.
		if got, want := read(t, dest+"/etc/systemd/system/"+d+".service"), read(t, "../../../systemd/"+d+".service"); got != want {
			t.Errorf("%s.service differs from systemd/%[1]s.service", d)
		}
		if got, want := read(t, dest+"/etc/default/"+d), read(t, "../../../systemd/"+d+".env.example"); got != want {
			t.Errorf("/etc/default/%s is not the example", d)
		}
		if got := read(t, dest+"/usr/local/share/man/man8/"+d+".8"); got != ".TH "+d+" 8\n" {
			t.Errorf("%s.8 is not `%[1]s man`: %q", d, got)
		}
		if got := read(t, dest+"/usr/local/share/zsh/site-functions/_"+d); got != "# zsh completion for "+d+"\n" {
			t.Errorf("_%s is not `%[1]s completion zsh`: %q", d, got)
		}
	}

	out = mustRun(t, "--dest", dest, "--bin-dir", bins)
	if !strings.Contains(out, "Nothing to do: timed mutexd electd orderd already installed (27 files up to date).") ||
		!strings.Contains(out, "No cluster key here yet") {
		t.Errorf("second install does not say it changed nothing, and that the key is missing:\n%s", out)
	}
	if second := tree(t, dest); !maps.Equal(first, second) {
		t.Errorf("second install touched files:\nbefore %v\nafter  %v", first, second)
	}

	// The key the admin copied here is kept, and never replaced.
	if err := os.MkdirAll(filepath.Dir(dest+keyFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dest+keyFile, []byte("1 hex:the-labs-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out = mustRun(t, "--dest", dest, "--bin-dir", bins)
	if got := read(t, dest+keyFile); got != "1 hex:the-labs-key\n" || !strings.Contains(out, "kept "+dest+keyFile+": the cluster key is never replaced") || strings.Contains(out, "No cluster key") {
		t.Errorf("a reinstall over the lab's key: key %q\n%s", got, out)
	}

	// An admin's configuration survives a reinstall, even of a changed
	// example, and the fresh example lands beside the binaries.
	conf := dest + "/etc/default/timed"
	if err := os.WriteFile(conf, []byte("TIMED_ID=7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(conf, 0o600)
	out = mustRun(t, "--dest", dest, "--bin-dir", bins)
	if got := read(t, conf); got != "TIMED_ID=7\n" || !strings.Contains(out, "kept "+conf+": an admin's configuration is never overwritten") {
		t.Errorf("admin's %s now %q; output:\n%s", conf, got, out)
	}
	if fi, _ := os.Stat(conf); fi.Mode() != 0o600 {
		t.Errorf("admin's mode %v changed", fi.Mode())
	}

	// A changed file is replaced, and only that one.
	os.WriteFile(dest+"/usr/local/bin/mutexd", []byte("old build"), 0o755)
	out = mustRun(t, "--dest", dest, "--bin-dir", bins)
	if !strings.Contains(out, "installed "+dest+"/usr/local/bin/mutexd ") || strings.Count(out, "installed ") != 1 {
		t.Errorf("replacing one changed binary:\n%s", out)
	}

	// The lab file is the admin's, and stays with the key.
	os.WriteFile(dest+"/etc/synclab/lab.toml", []byte("# the lab\n"), 0o644)
	if out := mustRun(t, "--dest", dest, "--bin-dir", bins); !strings.Contains(out, "The lab file is there: "+dest+"/etc/synclab/lab.toml (kept") {
		t.Errorf("install beside a lab file:\n%s", out)
	}

	out = mustRun(t, "uninstall", "--dest", dest)
	if !strings.Contains(out, "Removed 27 files") || !strings.Contains(out, "kept "+dest+"/etc/synclab/lab.toml") {
		t.Errorf("uninstall:\n%s", out)
	}
	checkTree(t, dest, map[string]fs.FileMode{"/etc/default/timed": 0o600, "/etc/default/mutexd": 0o644, "/etc/default/electd": 0o644, "/etc/default/orderd": 0o644,
		"/etc/default/synclab": 0o644, "/etc/synclab/lab.toml": 0o644, keyFile: 0o600})
	if out := mustRun(t, "uninstall", "--dest", dest); !strings.Contains(out, "Nothing to do") {
		t.Errorf("second uninstall:\n%s", out)
	}

	// --purge takes the configuration and the state too.
	os.MkdirAll(dest+"/var/lib/private/electd", 0o700)
	os.WriteFile(dest+"/var/lib/private/electd/term", []byte("x"), 0o600)
	os.Symlink("private/electd", dest+"/var/lib/electd")
	mustRun(t, "uninstall", "--purge", "--dest", dest)
	checkTree(t, dest, nil)
	if _, err := os.Lstat(dest + "/var/lib/electd"); !os.IsNotExist(err) {
		t.Errorf("state link left: %v", err)
	}
}

func TestPrefixAndOnly(t *testing.T) {
	bins := stubBins(t)
	dest := t.TempDir()
	mustRun(t, "--dest", dest, "--bin-dir", bins, "--prefix", "/opt/synclab", "--only", "electd,timed")
	checkTree(t, dest, expected("/opt/synclab", "timed", "electd"))
	for _, d := range []string{"timed", "electd"} {
		unit := read(t, dest+"/etc/systemd/system/"+d+".service")
		if !strings.Contains(unit, "\nExecStart=/opt/synclab/bin/"+d+" run\n") || strings.Contains(unit, "/usr/local/bin") {
			t.Errorf("%s.service not moved to the prefix:\n%s", d, unit)
		}
	}
	// Uninstalling another prefix finds nothing of it: not even the units,
	// whose place is the same for every prefix.
	out := mustRun(t, "uninstall", "--dest", dest)
	if !strings.Contains(out, "Nothing to do") || !strings.Contains(out, "its ExecStart is not /usr/local/bin/timed run") {
		t.Errorf("uninstall of /usr/local removed something:\n%s", out)
	}
	mustRun(t, "uninstall", "--dest", dest, "--prefix", "/opt/synclab", "--only", "timed")
	got := tree(t, dest)
	if _, ok := got["/etc/systemd/system/timed-wait.service"]; ok {
		t.Error("uninstall --only timed left timed-wait.service")
	}
	for p := range expected("/opt/synclab", "electd") {
		if _, ok := got[p]; !ok {
			t.Errorf("uninstall --only timed removed %s", p)
		}
	}
	if _, ok := got["/opt/synclab/bin/timed"]; ok {
		t.Error("uninstall --only timed left timed")
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	bins := stubBins(t)
	dest := filepath.Join(t.TempDir(), "root")
	out := mustRun(t, "--dry-run", "--dest", dest, "--bin-dir", bins)
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("--dry-run created %s (%v)", dest, err)
	}
	for p := range expected("/usr/local", daemons...) {
		if !strings.Contains(out, "would install "+dest+p+" ") {
			t.Errorf("--dry-run does not say it would install %s", p)
		}
	}
	if !strings.Contains(out, "Dry run: 32 files would be installed, 0 up to date; nothing was changed.") ||
		strings.Contains(out, "would create "+dest+keyFile) || !strings.Contains(out, "No cluster key here yet") {
		t.Errorf("dry run:\n%s", out)
	}

	mustRun(t, "--dest", dest, "--bin-dir", bins)
	before := tree(t, dest)
	out = mustRun(t, "uninstall", "--purge", "--dry-run", "--dest", dest)
	if !maps.Equal(before, tree(t, dest)) || !strings.Contains(out, "would remove "+dest+"/etc/default/timed") {
		t.Errorf("uninstall --dry-run changed the tree or said too little:\n%s", out)
	}
}

func TestUsageErrors(t *testing.T) {
	bins := stubBins(t)
	dest := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--only", "timed,ntpd"}, "--only: unknown daemon 'ntpd'"},
		{[]string{"--only", ","}, "--only: name at least one"},
		{[]string{"--purge"}, "--purge is for uninstall"},
		{[]string{"uninstall", "--bin-dir", bins}, "--bin-dir is for install"},
		{[]string{"--prefix", "opt"}, "--prefix 'opt': want an absolute path"},
		{[]string{"--prefix", "/opt/a b"}, "want an absolute path"},
		{[]string{"--bin-dir", dest}, "no executable timed there (build it: go build -o"},
		{[]string{"--frobnicate"}, "unknown argument '--frobnicate'"},
		{[]string{"--prefix"}, "--prefix needs a value"},
	} {
		out, code := run(t, append([]string{"--dest", dest}, tc.args...)...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("install.sh %q: exit %d, %q; want 2 and %q", tc.args, code, out, tc.want)
		}
	}
	if files := tree(t, dest); len(files) != 0 {
		t.Errorf("a refused call wrote %v", slices.Collect(maps.Keys(files)))
	}
	if os.Geteuid() != 0 {
		// The one call without --dest a test may make: it must stop
		// before doing anything.
		out, err := exec.Command("bash", script, "--bin-dir", bins).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "needs root") {
			t.Errorf("install on the host as a normal user: %v\n%s", err, out)
		}
	}
}

// TestRealDaemons lets the script build the daemons and checks what only
// the real binaries give: man pages with every variable the examples
// document, completions that complete, and a build that is the same
// bytes the second time.
func TestRealDaemons(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the four daemons; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command: install.sh cannot build the daemons")
	}
	dest := t.TempDir()
	mustRun(t, "--dest", dest)
	if out := mustRun(t, "--dest", dest); !strings.Contains(out, "Nothing to do") {
		t.Errorf("a second build and install changed something:\n%s", out)
	}
	for _, d := range daemons {
		page := read(t, dest+"/usr/local/share/man/man8/"+d+".8")
		for _, line := range strings.Split(read(t, "../../../systemd/"+d+".env.example"), "\n") {
			name, _, ok := strings.Cut(strings.TrimPrefix(line, "#"), "=")
			if !ok || name != strings.ToUpper(name) || strings.ContainsAny(name, " #") {
				continue
			}
			if !strings.Contains(page, `Environment: \fB`+strings.ReplaceAll(name, "-", `\-`)+`\fR`) {
				t.Errorf("%s.8 does not document %s", d, name)
			}
		}
		bash, err := exec.LookPath("bash")
		if err != nil {
			continue
		}
		bin := dest + "/usr/local/bin/" + d
		sh := `source "$1"; COMP_WORDS=("$2" ""); COMP_CWORD=1; _` + d + `_complete; echo "${COMPREPLY[*]}"`
		out, err := exec.Command(bash, "-c", sh, "bash", dest+"/usr/local/share/bash-completion/completions/"+d, bin).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "run status ") || !strings.Contains(string(out), " man completion") {
			t.Errorf("%s <TAB>: %q (%v)", d, out, err)
		}
	}
}
