package app

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/daemon"
)

// docsApp is a binary with every kind of flag the daemons use, a client
// command with a subcommand, and a command whose action leaves a mark: a
// completion must never run one.
func docsApp() *cli.App {
	return New(Spec{
		Name:        "testd",
		Usage:       "a daemon for tests",
		Description: "testd does nothing.\nIt says so with `testd status`.\n\nA second paragraph.",
		RunFlags: []cli.Flag{
			&cli.DurationFlag{Name: "heartbeat", EnvVars: Env("testd", "heartbeat"), Value: 50 * time.Millisecond, Usage: "leader heartbeat interval"},
			&cli.StringSliceFlag{Name: "on-elected", EnvVars: Env("testd", "on-elected"), Usage: "shell `CMD` run when elected"},
			&cli.BoolFlag{Name: "no-adjust", EnvVars: Env("testd", "no-adjust"), Usage: "measure only"},
			&cli.Float64Flag{Name: "sim-drift", EnvVars: Env("testd", "sim-drift"), Usage: "frequency error in `PPM`"},
			&cli.StringFlag{Name: "hidden-thing", Hidden: true, Usage: "not for the page"},
		},
		Build: func(*cli.Context, *daemon.Config) (daemon.CoreFactory, error) {
			return nil, Usagef("build reached")
		},
		Commands: []*cli.Command{{
			Name:  "lock",
			Usage: "take a lock and run a command",
			Flags: []cli.Flag{ControlFlag("testd"), &cli.DurationFlag{Name: "wait", Usage: "give up after `D`"}},
			Action: func(c *cli.Context) error {
				return os.WriteFile(os.Getenv("TESTD_MARK"), []byte(strings.Join(c.Args().Slice(), " ")), 0o644)
			},
			Subcommands: []*cli.Command{{Name: "release", Usage: "release a lock", Flags: []cli.Flag{JSONFlag}}},
		}},
		Examples: []Example{{Cmd: "testd lock db --wait 5s -- true", Does: "take lock db for true."}},
		Exits:    map[string][]Exit{"lock": {{Code: "75", Meaning: "not granted in time"}}},
	})
}

// TestMain lets the test binary play testd, so that the completion scripts
// can be run against a real program.
func TestMain(m *testing.M) {
	// No test reads this machine's own lab file (/etc/synclab/lab.toml).
	os.Setenv("SYNCLAB_LAB_FILE", "")
	if os.Getenv("TESTD_BE_APP") == "1" {
		Main(docsApp())
	}
	os.Exit(m.Run())
}

func runApp(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	a := docsApp()
	a.Writer, a.ErrWriter = &out, &errb
	code = Run(a, append([]string{"testd"}, args...), &errb)
	return out.String(), errb.String(), code
}

func TestManListsEveryFlagWithItsVariable(t *testing.T) {
	page, stderr, code := runApp(t, "man")
	if code != 0 {
		t.Fatalf("testd man: exit %d: %s", code, stderr)
	}
	if again, _, _ := runApp(t, "man"); again != page {
		t.Error("two runs print different pages: an installer could not tell that nothing changed")
	}
	a := docsApp()
	a.Setup()
	env := page[strings.Index(page, ".SH ENVIRONMENT"):]
	for _, c := range visibleCommands(a.Commands, "") {
		if !strings.Contains(page, `.SS "testd `+roff(c.path)+`"`) {
			t.Errorf("no section for %q", c.path)
		}
		for _, f := range c.cmd.Flags {
			name := f.Names()[0]
			hidden := name == "help" || name == "hidden-thing"
			if got := strings.Contains(page, `\fB`+roff("--"+name)+`\fR`); got == hidden {
				t.Errorf("%s --%s on the page: %v", c.path, name, got)
			}
			vars := f.(cli.DocGenerationFlag).GetEnvVars()
			for _, v := range vars {
				if !strings.Contains(page, "Environment: "+manEnv(vars)+".") || !strings.Contains(manEnv(vars), `\fB`+roff(v)+`\fR`) || !strings.Contains(env, ".B "+roff(v)+"\n") {
					t.Errorf("%s --%s: variable %s missing from its entry or from ENVIRONMENT", c.path, name, v)
				}
			}
		}
	}
	for _, want := range []string{
		`.TH TESTD 8 "" "synclab ` + Version + `"`,
		`\fB\-\-heartbeat\fR \fIDURATION\fR` + "\nleader heartbeat interval. Default: \\fB50ms\\fR. Environment: \\fBTESTD_HEARTBEAT\\fR.",
		`\fB\-\-on\-elected\fR \fICMD\fR` + "\nshell CMD run when elected. Repeatable.",
		`\fB\-\-no\-adjust\fR` + "\nmeasure only. Environment:",
		`\fB\-\-control\fR \fIPATH\fR`,
		`.SS "testd lock release"`,
		`It says so with \fBtestd status\fR.` + "\n.PP\nA second paragraph.",
		".B TESTD_CONTROL\nsets \\fBtestd run \\-\\-control\\fR, \\fBtestd status \\-\\-control\\fR, \\fBtestd lock \\-\\-control\\fR, " +
			"\\fBtestd trace start \\-\\-control\\fR, \\fBtestd trace stop \\-\\-control\\fR, \\fBtestd trace status \\-\\-control\\fR, \\fBtestd web \\-\\-control\\fR.",
		".SH EXIT STATUS",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Log("groff is not installed: the page's roff is not checked (apt-get install groff-base)")
		return
	}
	cmd := exec.Command(groff, "-man", "-ww", "-z", "-Tutf8")
	cmd.Stdin = strings.NewReader(page)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("groff -ww: %v\n%s", err, out)
	}
}

func TestRoffEscapes(t *testing.T) {
	for in, want := range map[string]string{
		`--flag`:   `\-\-flag`,
		`a\b`:      `a\eb`,
		`.TH x`:    `\&.TH x`,
		`'quoted'`: `\&'quoted'`,
	} {
		if got := roff(in); got != want {
			t.Errorf("roff(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCompletionCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"completion", "bash"}, 0, "complete -o bashdefault -o default -F _testd_complete testd\n"},
		{[]string{"completion", "zsh"}, 0, "#compdef testd\n"},
		{[]string{"completion", "fish"}, 2, "want bash or zsh"},
		{[]string{"completion"}, 2, "one argument"},
		{[]string{"man", "extra"}, 2, "no arguments"},
	} {
		out, errs, code := runApp(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("%q: exit %d, output %q %q; want %d and %q", tc.args, code, out, errs, tc.code, tc.want)
		}
	}
}

func TestCompletionArgs(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []string // nil: nothing is run
	}{
		{[]string{"x", "run"}, []string{"x", "run"}},
		{[]string{"x", "run", completionFlag}, []string{"x", "run", completionFlag}},
		// timed moves flags before a query's hosts.
		{[]string{"x", "query", completionFlag, "10.0.0.1"}, []string{"x", "query", "10.0.0.1", completionFlag}},
		{[]string{"x", "lock", "--", "sh", completionFlag}, nil},
	} {
		got, ok := completionArgs(tc.in)
		if ok != (tc.want != nil) || !slices.Equal(got, tc.want) {
			t.Errorf("completionArgs(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

// TestCompletionScripts runs each script's function the way the shell
// does at a TAB, against the test binary playing testd.
func TestCompletionScripts(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mark := t.TempDir() + "/mark"
	t.Setenv("TESTD_BE_APP", "1")
	t.Setenv("TESTD_MARK", mark)
	cases := []struct {
		words []string // the last one is being completed
		want  string
	}{
		{[]string{""}, "run status lock keygen trace web man completion version"},
		{[]string{"lo"}, "lock"},
		{[]string{"run", "--he"}, "--heartbeat --help"},
		{[]string{"lock", ""}, "release"},
		{[]string{"lock", "-"}, "--control --wait --help -h"},
		{[]string{"lock", "release", ""}, ""},
		// "--" ends the options: nothing to ask, and the command must not run.
		{[]string{"lock", "--", "sh", ""}, ""},
		{[]string{"lock", "--"}, "--control --wait --help"},
		{[]string{"lock", "--w"}, "--wait"},
	}
	shells := map[string]string{
		"bash": `source <("$PROG" completion bash)
COMP_WORDS=("$PROG" "$@"); COMP_CWORD=$#
_testd_complete
echo "${COMPREPLY[*]}"`,
		// compadd and _files belong to zsh's completion system, which a
		// non-interactive zsh does not load: these print what the real
		// ones would offer.
		"zsh": `compdef() { : }
compadd() { local w; for w in "${(@P)2}"; do [[ $w == ${words[CURRENT]}* ]] && print -r -- $w; done }
_files() { print }
eval "$("$PROG" completion zsh)"
words=("$PROG" "$@"); CURRENT=${#words}
_testd || true`,
	}
	for _, sh := range []string{"bash", "zsh"} {
		t.Run(sh, func(t *testing.T) {
			path, err := exec.LookPath(sh)
			if err != nil {
				t.Skipf("%s is not installed: its completion script is not run (apt-get install %s)", sh, sh)
			}
			script, _, _ := runApp(t, "completion", sh)
			if out, err := exec.Command(path, "-n", "-c", script).CombinedOutput(); err != nil {
				t.Fatalf("%s -n: %v\n%s", sh, err, out)
			}
			for _, tc := range cases {
				cmd := exec.Command(path, append([]string{"-c", shells[sh], sh}, tc.words...)...)
				cmd.Env = append(os.Environ(), "PROG="+self)
				out, err := cmd.CombinedOutput()
				got := strings.Join(strings.Fields(string(out)), " ")
				if err != nil || got != tc.want {
					t.Errorf("testd %s<TAB>: %q (%v), want %q", strings.Join(tc.words, " "), got, err, tc.want)
				}
				if _, err := os.Stat(mark); err == nil {
					t.Fatalf("testd %s<TAB> ran the command", strings.Join(tc.words, " "))
				}
			}
		})
	}
}

// TestManExamplesAndExits: the page has the binary's examples before the
// ones every binary shares, and EXIT STATUS has the convention and each
// command's own codes.
func TestManExamplesAndExits(t *testing.T) {
	page, _, code := runApp(t, "man")
	if code != 0 {
		t.Fatalf("testd man: exit %d", code)
	}
	for _, want := range []string{
		".SH EXIT STATUS\n.TP\n.B 0\nSuccess.\n.TP\n.B 1\nFailure:",
		".TP\n.B 2\nUsage error:",
		".PP\n\\fBtestd lock\\fR:\n.TP\n.B 75\nNot granted in time.\n",
		".PP\n\\fBtestd run\\fR:\n.TP\n.B 0\nThe daemon was stopped",
		".SH EXAMPLES\n.PP\n.nf\n.RS\ntestd lock db \\-\\-wait 5s \\-\\- true\n.RE\n.fi\nTake lock db for true.\n",
		"testd keygen\n.RE\n.fi\nMake the cluster key, /etc/synclab/cluster.key, on the first machine only",
		".I /etc/synclab/cluster.key\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if i, j := strings.Index(page, ".SH EXIT STATUS"), strings.Index(page, ".SH EXAMPLES"); i < 0 || j < i || !strings.Contains(page[j:], ".SH SEE ALSO") {
		t.Error("sections out of order: want EXIT STATUS, EXAMPLES, SEE ALSO")
	}
}

// TestMarkdownReference: the Markdown reference lists every visible
// command under its own heading, with a flag table, the command's exits,
// and the examples.
func TestMarkdownReference(t *testing.T) {
	a := docsApp()
	a.Setup()
	var b bytes.Buffer
	if err := WriteMarkdown(&b, a); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, c := range visibleCommands(a.Commands, "") {
		if !strings.Contains(md, "\n## testd "+c.path+"\n") || !strings.Contains(md, "](#"+Anchor("testd "+c.path)+")") {
			t.Errorf("no heading or index link for %q", c.path)
		}
	}
	for _, want := range []string{
		"| `--heartbeat DURATION` | `TESTD_HEARTBEAT` | `50ms` | leader heartbeat interval |",
		"| `--on-elected CMD` | `TESTD_ON_ELECTED` |  | shell CMD run when elected (repeatable) |",
		"- **75**: not granted in time.",
		"```sh\ntestd lock db --wait 5s -- true\n```\n\nTake lock db for true.",
		"`testd trace start\\|stop`", // GFM: a pipe in a cell is escaped, in a code span too
	} {
		if !strings.Contains(md, want) {
			t.Errorf("reference lacks %q", want)
		}
	}
	if strings.Contains(md, "hidden-thing") {
		t.Error("a hidden flag is in the reference")
	}
}

func TestAnchor(t *testing.T) {
	for in, want := range map[string]string{
		"timed run":                         "timed-run",
		"What each algorithm survives":      "what-each-algorithm-survives",
		"Berkeley mode (`--mode berkeley`)": "berkeley-mode---mode-berkeley",
		"A peer shows down":                 "a-peer-shows-down",
		"Maekawa and the majority quorum":   "maekawa-and-the-majority-quorum",
		"Bound ± error — p99 ≤ 50 µs":       "bound--error--p99--50-µs",
		"Größe":                             "größe",
	} {
		if got := Anchor(in); got != want {
			t.Errorf("Anchor(%q) = %q, want %q", in, got, want)
		}
	}
}
