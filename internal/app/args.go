package app

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// FlagsFirst rewrites argv so that, for the named client commands, flags
// given after the positional arguments are parsed too: urfave/cli v2 stops
// at the first argument, so `mutexd lock NAME --timeout 5s -- CMD` would
// take "--timeout" as part of the command. Flags keep their order, then the
// arguments follow; from "--" on nothing is moved (the command's own
// flags). Flags that take a value carry it along.
func FlagsFirst(argv []string, a *cli.App, commands ...string) []string {
	if len(argv) < 2 {
		return argv
	}
	var cmd *cli.Command
	for _, c := range a.Commands {
		for _, n := range commands {
			if c.Name == n && argv[1] == n {
				cmd = c
			}
		}
	}
	if cmd == nil {
		return argv
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	var flags, args []string
	rest := argv[2:]
	for i := 0; i < len(rest); i++ {
		tok := rest[i]
		if tok == "--" {
			args = append(args, rest[i:]...)
			break
		}
		if len(tok) < 2 || tok[0] != '-' {
			args = append(args, tok)
			continue
		}
		flags = append(flags, tok)
		name := strings.TrimLeft(tok, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if takesValue[name] && i+1 < len(rest) {
			i++
			flags = append(flags, rest[i])
		}
	}
	out := append([]string{argv[0], argv[1]}, flags...)
	return append(out, args...)
}
