package app

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// manSection is where daemons and their administration tools belong.
const manSection = "8"

func manCommand(name string) *cli.Command {
	return &cli.Command{
		Name:  "man",
		Usage: "print this manual page (roff): " + name + " man | man -l -",
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return Usagef("man takes no arguments")
			}
			return WriteMan(c.App.Writer, c.App)
		},
	}
}

func completionCommand(name string) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: source <(" + name + " completion bash)",
		ArgsUsage: "bash|zsh",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return Usagef("completion takes one argument, the shell: bash or zsh")
			}
			return WriteCompletion(c.App.Writer, c.App.Name, c.Args().First())
		},
	}
}

// WriteMan renders a's manual page in roff (man(7)). urfave/cli's own
// ToMan leaves out the environment variables, which are how a systemd
// host is configured, so every flag is listed here with its variable and
// default, and the variables again in ENVIRONMENT. The page carries no
// date, so an unchanged binary prints the same bytes (install.sh relies
// on that to be idempotent).
func WriteMan(w io.Writer, a *cli.App) error {
	name := a.Name
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s %s \"\" %q \"synclab\"\n", strings.ToUpper(name), manSection, "synclab "+Version)
	// Options, variables and paths are copied from the page: no
	// hyphenation, and no justification stretching them apart.
	b.WriteString(".nh\n.ad l\n")
	b.WriteString(".SH NAME\n" + roff(name) + " \\- " + roff(a.Usage) + "\n")

	b.WriteString(".SH SYNOPSIS\n")
	cmds := visibleCommands(a.Commands, "")
	for _, c := range cmds {
		fmt.Fprintf(&b, ".B %s %s\n", roff(name), roff(c.path))
		if len(visibleFlags(c.cmd.Flags)) > 0 {
			b.WriteString(".RI [ options ]\n")
		}
		if c.cmd.ArgsUsage != "" {
			b.WriteString(".I " + roff(c.cmd.ArgsUsage) + "\n")
		}
		b.WriteString(".br\n")
	}

	b.WriteString(".SH DESCRIPTION\n")
	paragraphs(&b, a.Description)
	b.WriteString(".PP\nEvery option of a command can also be set by the environment variable named with it " +
		"(see \\fBENVIRONMENT\\fR), so that a systemd \\fBEnvironmentFile=\\fR configures a host; " +
		"an option given on the command line wins over its variable.\n")

	b.WriteString(".SH COMMANDS\n")
	env := map[string][]string{} // variable -> "cmd --flag" it sets
	for _, c := range cmds {
		fmt.Fprintf(&b, ".SS \"%s %s\"\n", roff(name), roff(c.path))
		paragraphs(&b, c.cmd.Usage)
		if c.cmd.Description != "" {
			paragraphs(&b, c.cmd.Description)
		}
		for _, f := range visibleFlags(c.cmd.Flags) {
			writeManFlag(&b, f)
			for _, v := range f.GetEnvVars() {
				env[v] = append(env[v], name+" "+c.path+" --"+f.Names()[0])
			}
		}
	}
	if flags := visibleFlags(a.Flags); len(flags) > 0 {
		b.WriteString(".SH OPTIONS\nThese come before the command; every command also takes \\fB\\-\\-help\\fR.\n")
		for _, f := range flags {
			writeManFlag(&b, f)
		}
	}

	if len(env) > 0 {
		b.WriteString(".SH ENVIRONMENT\n")
		for _, v := range slices.Sorted(maps.Keys(env)) {
			fmt.Fprintf(&b, ".TP\n.B %s\nsets ", roff(v))
			for i, use := range env[v] {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString("\\fB" + roff(use) + "\\fR")
			}
			b.WriteString(".\n")
		}
	}

	fmt.Fprintf(&b, `.SH FILES
.TP
.I /etc/default/%[1]s
the environment file of \fB%[1]s.service\fR (systemd): one \fBVARIABLE=value\fR a line, as in ENVIRONMENT.
.TP
.I /etc/synclab/lab.toml
the lab file (\fB\-\-lab\-file\fR): the lab's hosts with their IDs and addresses, each daemon's port and settings, the same file on every machine.
.TP
.I /etc/default/synclab
the environment file every synclab unit reads before its own: what one machine says to all four daemons (\fBSYNCLAB_LAB_HOST\fR).
.TP
.I /lib/systemd/system/%[1]s.service
the hardened systemd unit that runs \fB%[1]s run\fR (from the Debian package; \fBscripts/install.sh\fR puts it in \fI/etc/systemd/system\fR).
.TP
.I %[2]s
the cluster key: the same file, mode 0600, on every member. \fB%[1]s keygen\fR makes it on the first machine; copy that file to the others.
.TP
.I /run/%[1]s/control.sock
the control socket the client commands talk to (\fB\-\-control\fR).
.TP
.I /var/lib/%[1]s
durable state (\fB\-\-state\-dir\fR), locked by the running daemon.
`, roff(name), roff(DefaultKeyFile))
	writeManExits(&b, name, cmds, exitsOf(a))
	b.WriteString(".SH EXAMPLES\n")
	for _, e := range append(slices.Clone(manualOf(a).examples), commonExamples(name)...) {
		b.WriteString(".PP\n.nf\n.RS\n" + roff(e.Cmd) + "\n.RE\n.fi\n" + roff(capital(e.Does)) + "\n")
	}
	b.WriteString(".SH SEE ALSO\n")
	var see []string
	for _, d := range []string{"timed", "mutexd", "electd", "orderd"} {
		if d != name {
			see = append(see, `\fB`+d+`\fR(`+manSection+`)`)
		}
	}
	see = append(see, `\fBsystemctl\fR(1)`, `\fBjournalctl\fR(1)`, `\fBsystemd.exec\fR(5)`)
	b.WriteString(strings.Join(see, ", ") + "\n")
	fmt.Fprintf(&b, ".PP\nThe guides: \\fBREADME.md\\fR and \\fBdocs/\\fR of the synclab repository (\\fIdocs/%s.md\\fR for this daemon); "+
		"the Debian package installs them in \\fI/usr/share/doc/synclab\\fR.\n", roff(name))
	_, err := io.WriteString(w, b.String())
	return err
}

// writeManExits writes EXIT STATUS: the convention, then each command's
// own meanings.
func writeManExits(b *strings.Builder, name string, cmds []pathCommand, exits map[string][]Exit) {
	b.WriteString(".SH EXIT STATUS\n")
	for _, e := range conventionExits {
		fmt.Fprintf(b, ".TP\n.B %s\n%s.\n", roff(e.Code), roff(capital(e.Meaning)))
	}
	for _, c := range cmds {
		if len(exits[c.path]) == 0 {
			continue
		}
		fmt.Fprintf(b, ".PP\n\\fB%s %s\\fR:\n", roff(name), roff(c.path))
		for _, e := range exits[c.path] {
			fmt.Fprintf(b, ".TP\n.B %s\n%s.\n", roff(e.Code), roff(capital(e.Meaning)))
		}
	}
}

type pathCommand struct {
	path string // "run", "lock release"
	cmd  *cli.Command
}

// visibleCommands flattens the command tree, subcommands after their
// parent, leaving out hidden commands and urfave's help.
func visibleCommands(cmds []*cli.Command, prefix string) []pathCommand {
	var out []pathCommand
	for _, c := range cmds {
		if c.Hidden || c.Name == "help" {
			continue
		}
		p := strings.TrimSpace(prefix + " " + c.Name)
		out = append(out, pathCommand{p, c})
		out = append(out, visibleCommands(c.Subcommands, p)...)
	}
	return out
}

// visibleFlags leaves out hidden flags and --help, which every command has.
func visibleFlags(flags []cli.Flag) []cli.DocGenerationFlag {
	var out []cli.DocGenerationFlag
	for _, f := range flags {
		df, ok := f.(cli.DocGenerationFlag)
		if !ok || f.Names()[0] == "help" {
			continue
		}
		if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
			continue
		}
		out = append(out, df)
	}
	return out
}

func writeManFlag(b *strings.Builder, f cli.DocGenerationFlag) {
	b.WriteString(".TP\n")
	for i, n := range f.Names() {
		if i > 0 {
			b.WriteString(", ")
		}
		dash := "--"
		if len(n) == 1 {
			dash = "-"
		}
		b.WriteString(`\fB` + roff(dash+n) + `\fR`)
	}
	placeholder, usage := unquoteUsage(f.GetUsage())
	if f.TakesValue() {
		if placeholder == "" {
			placeholder = placeholderFor(f)
		}
		b.WriteString(` \fI` + roff(placeholder) + `\fR`)
	}
	b.WriteString("\n" + roff(usage))
	if !strings.HasSuffix(usage, ".") {
		b.WriteString(".")
	}
	if repeatable(f, usage) {
		b.WriteString(" Repeatable.")
	}
	if def := strings.Trim(f.GetDefaultText(), `"`); f.TakesValue() && !isZero(def) {
		b.WriteString(` Default: \fB` + roff(def) + `\fR.`)
	}
	if env := f.GetEnvVars(); len(env) > 0 {
		b.WriteString(" Environment: " + manEnv(env) + ".")
	}
	b.WriteString("\n")
}

// repeatable says whether to add that f may be given more than once: a
// slice flag whose usage does not say so already.
func repeatable(f cli.Flag, usage string) bool {
	sf, ok := f.(cli.DocGenerationSliceFlag)
	return ok && sf.IsSliceFlag() && !strings.Contains(strings.ToLower(usage), "repeat")
}

// manEnv lists a flag's variables: \fBA\fR, or \fBB\fR (the first
// wins).
func manEnv(env []string) string {
	var parts []string
	for _, v := range env {
		parts = append(parts, `\fB`+roff(v)+`\fR`)
	}
	return strings.Join(parts, ", or ")
}

// unquoteUsage splits a usage string at its `PLACEHOLDER`, the way
// urfave/cli shows it in --help.
func unquoteUsage(usage string) (placeholder, text string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	placeholder = usage[i+1 : i+1+j]
	return placeholder, usage[:i] + placeholder + usage[i+2+j:]
}

func placeholderFor(f cli.Flag) string {
	switch f.(type) {
	case *cli.DurationFlag:
		return "DURATION"
	case *cli.IntFlag, *cli.UintFlag, *cli.Int64Flag, *cli.Uint64Flag:
		return "N"
	case *cli.Float64Flag:
		return "NUMBER"
	}
	return "VALUE"
}

// isZero says a default is not worth printing: the flag is off or empty
// unless set (a flag whose 0 means something says so in its usage).
func isZero(def string) bool {
	switch def {
	case "", "0", "0s", "false", "[]":
		return true
	}
	return false
}

// paragraphs writes text as roff paragraphs: blank lines separate them,
// and single line breaks are the CLI's wrapping, not the page's. A
// `quoted command` is set in bold.
func paragraphs(b *strings.Builder, text string) {
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		parts := strings.Split(roff(strings.Join(strings.Fields(p), " ")), "`")
		b.WriteString(".PP\n")
		for i, part := range parts {
			switch {
			case i%2 == 1 && i < len(parts)-1:
				part = `\fB` + part + `\fR`
			case i%2 == 1:
				part = "`" + part // an unpaired backtick stays
			}
			b.WriteString(part)
		}
		b.WriteString("\n")
	}
}

var roffEscaper = strings.NewReplacer(`\`, `\e`, `-`, `\-`)

// roff escapes text for a roff line: backslashes, and hyphens (an
// unescaped "-" may be typeset as a hyphen, and a copied --flag then
// does not work); a line may not begin with a control character.
func roff(s string) string {
	s = roffEscaper.Replace(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// WriteCompletion writes the completion script of program prog for shell.
// Both scripts ask the program itself, through urfave/cli's hidden
// --generate-bash-completion flag, so they never go stale; they never
// pass "--" along, after which urfave/cli would run the command instead of
// completing it.
func WriteCompletion(w io.Writer, prog, shell string) error {
	var script string
	switch shell {
	case "bash":
		script = bashCompletion
	case "zsh":
		script = zshCompletion
	default:
		return Usagef("completion %q: want bash or zsh", shell)
	}
	fn := "_" + strings.ReplaceAll(prog, "-", "_")
	_, err := io.WriteString(w, strings.NewReplacer("PROG", prog, "FUNC", fn).Replace(script))
	return err
}

// The request for completions ends in "-" when the word being completed is
// an option: urfave/cli then lists the command's options (the shell
// filters them), and a word of exactly "--" is never passed on. urfave/cli
// offers its help pseudo-command ("help", "h") after every command; no
// synclab command has a subcommand of that name, so it is dropped, and an
// argument falls back to file names.
const bashCompletion = `# bash completion for PROG (synclab): PROG completion bash
FUNC_complete() {
	local cur=${COMP_WORDS[COMP_CWORD]}
	local -a words=("${COMP_WORDS[@]:0:COMP_CWORD}")
	local w
	for w in "${words[@]:1}"; do
		[[ $w == -- ]] && return 0
	done
	[[ $cur == -* ]] && words+=(-)
	local IFS=$'\n'
	COMPREPLY=($(compgen -W "$("${words[@]}" --generate-bash-completion 2>/dev/null | grep -vx -e help -e h)" -- "$cur"))
}
complete -o bashdefault -o default -F FUNC_complete PROG
`

const zshCompletion = `#compdef PROG
# zsh completion for PROG (synclab): PROG completion zsh > "${fpath[1]}/_PROG"

FUNC() {
	local -a args opts
	args=("${(@)words[1,CURRENT-1]}")
	(( ${args[(Ie)--]} > 1 )) && return 1
	[[ ${words[CURRENT]} == -* ]] && args+=(-)
	opts=("${(@f)$("${args[@]}" --generate-bash-completion 2>/dev/null)}")
	opts=(${opts:#(help|h)})
	if [[ -n ${opts[1]} ]]; then
		compadd -a opts
	else
		_files
	fi
}

if [[ $funcstack[1] == FUNC ]]; then
	FUNC "$@"
else
	compdef FUNC PROG
fi
`
