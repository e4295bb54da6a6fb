package app

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"

	"github.com/urfave/cli/v2"
)

// Example is one entry of a manual page's EXAMPLES: a command line and
// what it does. The command must be one of the binary's own (a test
// checks every command and flag it names).
type Example struct {
	Cmd  string // "mutexd lock backup -- rsync -a /home /mnt/backup"
	Does string // one sentence
}

// Exit is an exit status a command returns besides the convention's
// 0, 1 and 2 (or a meaning of 1 particular to it).
type Exit struct {
	Code    string // "75", "128+N", "CMD's own"
	Meaning string
}

// manual is what a Spec adds to the generated pages, kept in the app's
// Metadata under manualKey.
type manual struct {
	examples []Example
	exits    map[string][]Exit // command path -> its exits
}

const manualKey = "synclab.manual"

func manualOf(a *cli.App) manual {
	m, _ := a.Metadata[manualKey].(manual)
	return m
}

// commonExamples are the examples every binary shares, after its own.
func commonExamples(name string) []Example {
	return []Example{
		{name + " status", "the running daemon's view: members, role, counters (--json for scripts)."},
		{name + " status --cluster", "the whole lab in one table, from any member: one row per member (those that do not answer too), whether its configuration agrees, its state, clock offset, version and uptime; exit 3 when a member does not answer or differs."},
		{name + " keygen", "make the cluster key, " + DefaultKeyFile + ", on the first machine only; copy that file to every other member (scp -p), never run keygen there."},
		{name + " trace start", "record a protocol trace of the running daemon into its state directory's traces/; " + name + " trace stop ends it."},
		{name + " trace draw h1.trace h2.trace h3.trace -o run.html", "draw the traces of three hosts as a space-time diagram to explore in a browser."},
		{name + " trace check h1.trace h2.trace h3.trace --clock-bound 1ms", "decide whether the run those traces record kept the daemon's promises, one verdict per property (exit 4 on a violation, drawn with --draw OUT.html)."},
		{name + " completion bash", "print the bash completion script (source <(" + name + " completion bash))."},
	}
}

// conventionExits are the exit statuses every command follows.
var conventionExits = []Exit{
	{"0", "success"},
	{"1", "failure: the daemon could not be reached or refused the call, or the command failed; the message on stderr says what is wrong and how to fix it"},
	{"2", "usage error: an unknown command or flag, a bad value, a missing argument, or a setting the daemon refuses before it starts (a cluster without a key included); the message names it"},
}

// commonExits are the particular meanings of the commands every binary
// shares.
func commonExits() map[string][]Exit {
	return map[string][]Exit{
		"run": {
			{"0", "the daemon was stopped (SIGTERM, SIGINT) and shut down cleanly"},
			{"1", "the daemon could not start or had to stop: an address in use, a state directory it cannot write, a state file it cannot trust (the message names the file)"},
		},
		"trace check": checkExits(),
		"status": {
			{fmt.Sprint(ExitIncomplete), "with --cluster: a member did not answer, or its configuration differs from this member's (the table, or the JSON's rows, say which and why; stderr names them)"},
		},
	}
}

// exitsOf returns the exits documented for every command of a, by
// command path, the common ones first.
func exitsOf(a *cli.App) map[string][]Exit {
	out := commonExits()
	for path, exits := range manualOf(a).exits {
		out[path] = append(out[path], exits...)
	}
	return out
}

// WriteMarkdown renders a's command-line reference as Markdown: every
// command with every flag, its variable and default, then the examples
// and the exit statuses. docs/reference/X.md is this output, checked by
// each binary's tests.
func WriteMarkdown(w io.Writer, a *cli.App) error {
	name := a.Name
	var b strings.Builder
	fmt.Fprintf(&b, "# %s command reference\n\n", name)
	fmt.Fprintf(&b, "<!-- Generated from the %s binary's command line (internal/app.WriteMarkdown); do not edit.\n", name)
	fmt.Fprintf(&b, "     Regenerate with: go test ./cmd/%s -run TestReferenceDocs -docs.update -->\n\n", name)
	fmt.Fprintf(&b, "%s: %s. The same text is the manual page, `%s man | man -l -`.\n\n", name, mdText(a.Usage), name)
	b.WriteString(mdParagraphs(a.Description))
	fmt.Fprintf(&b, "Every option of a command can also be set by the environment variable named with it, "+
		"so that a systemd `EnvironmentFile=` (`/etc/default/%s`) configures a host; "+
		"an option given on the command line wins over its variable.\n\n", name)
	cmds := visibleCommands(a.Commands, "")
	b.WriteString("Commands:")
	for i, c := range cmds {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " [%s](#%s)", c.path, Anchor(name+" "+c.path))
	}
	b.WriteString(".\n\n")
	exits := exitsOf(a)
	for _, c := range cmds {
		fmt.Fprintf(&b, "## %s %s\n\n", name, c.path)
		synopsis := name + " " + c.path
		if len(visibleFlags(c.cmd.Flags)) > 0 {
			synopsis += " [options]"
		}
		if c.cmd.ArgsUsage != "" {
			synopsis += " " + c.cmd.ArgsUsage
		}
		fmt.Fprintf(&b, "```\n%s\n```\n\n", synopsis)
		b.WriteString(mdParagraphs(capital(c.cmd.Usage) + "."))
		if c.cmd.Description != "" {
			b.WriteString(mdParagraphs(c.cmd.Description))
		}
		if flags := visibleFlags(c.cmd.Flags); len(flags) > 0 {
			b.WriteString("| option | variable | default | meaning |\n| --- | --- | --- | --- |\n")
			for _, f := range flags {
				b.WriteString(mdFlagRow(f))
			}
			b.WriteString("\n")
		}
		if ex := exits[c.path]; len(ex) > 0 {
			b.WriteString("Exit status besides the convention below:\n\n")
			for _, e := range ex {
				fmt.Fprintf(&b, "- **%s**: %s.\n", e.Code, mdText(e.Meaning))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("## Examples\n\n")
	for _, e := range append(slices.Clone(manualOf(a).examples), commonExamples(name)...) {
		fmt.Fprintf(&b, "```sh\n%s\n```\n\n%s\n\n", e.Cmd, mdText(capital(e.Does)))
	}
	b.WriteString("## Exit status\n\n")
	for _, e := range conventionExits {
		fmt.Fprintf(&b, "- **%s**: %s.\n", e.Code, mdText(e.Meaning))
	}
	b.WriteString("\nEach command's own meanings are listed under it above.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func mdFlagRow(f cli.DocGenerationFlag) string {
	var names []string
	for _, n := range f.Names() {
		dash := "--"
		if len(n) == 1 {
			dash = "-"
		}
		names = append(names, dash+n)
	}
	placeholder, usage := unquoteUsage(f.GetUsage())
	opt := strings.Join(names, ", ")
	if f.TakesValue() {
		if placeholder == "" {
			placeholder = placeholderFor(f)
		}
		opt += " " + placeholder
	}
	if repeatable(f, usage) {
		usage += " (repeatable)"
	}
	def := strings.Trim(f.GetDefaultText(), `"`)
	if !f.TakesValue() || isZero(def) {
		def = ""
	}
	return fmt.Sprintf("| `%s` | %s | %s | %s |\n", opt, mdCode(strings.Join(f.GetEnvVars(), ", ")), mdCode(def), mdCell(usage))
}

func mdCode(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

// mdCell escapes text for a table cell: a pipe would end it.
func mdCell(s string) string {
	return strings.ReplaceAll(mdText(s), "|", `\|`)
}

// mdText keeps text from being read as markup it is not: stray
// underscores and asterisks inside words are left alone by CommonMark,
// and so are the backquoted commands, which stay code. Angle brackets
// would open HTML.
func mdText(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(s)
}

// mdParagraphs writes text as Markdown paragraphs: blank lines separate
// them, and single line breaks are the CLI's wrapping.
func mdParagraphs(text string) string {
	var b strings.Builder
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			b.WriteString(mdText(p) + "\n\n")
		}
	}
	return b.String()
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Anchor is the anchor GitHub (and most Markdown renderers) give a
// heading: lower case, spaces to hyphens, letters, digits and underscores
// kept, every other character dropped, also outside ASCII ("±", "≤",
// "—": a heading "Bound ± error" is #bound--error). The repository's
// link check uses it too.
func Anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ' || r == '-':
			b.WriteRune('-')
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
