package app

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"regexp"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/daemon"
)

// The flag package's and urfave/cli's words for a bad command line, which
// name flags with one dash and say nothing of what was wanted.
var (
	reUnknownFlag = regexp.MustCompile(`^flag provided but not defined: -{1,2}(\S+)$`)
	reBadValue    = regexp.MustCompile(`^invalid value "(.*)" for flag -{1,2}([^:\s]+): `)
	reBadEnv      = regexp.MustCompile(`^could not parse "(.*)" (?:as [a-z0-9 ]+ value from|from) environment variable "([A-Za-z0-9_]+)" (?:as value )?for flag ([^:\s]+): `)
)

// explainUsage rewrites urfave/cli's and package flag's usage errors in
// synclab's words: the flag as it is typed (--name), the value, what a
// good value looks like, and for an unknown flag the nearest known one.
// Other errors are returned as they are.
func explainUsage(flags []cli.Flag, err error) error {
	msg := err.Error()
	if m := reUnknownFlag.FindStringSubmatch(msg); m != nil {
		if near := nearestFlag(flags, m[1]); near != "" {
			return fmt.Errorf("unknown flag --%s (did you mean --%s?)", m[1], near)
		}
		return fmt.Errorf("unknown flag --%s", m[1])
	}
	if m := reBadValue.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("--%s %q: %s", m[2], m[1], wantOf(findFlag(flags, m[2])))
	}
	if m := reBadEnv.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s=%q (--%s): %s", m[2], m[1], m[3], wantOf(findFlag(flags, m[3])))
	}
	return err
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// wantOf says what a flag's value must look like.
func wantOf(f cli.Flag) string {
	switch f.(type) {
	case *cli.DurationFlag:
		return "want a duration with its unit, e.g. 500ms, 3s or 1m"
	case *cli.Float64Flag:
		return "want a number, e.g. 35 or -2.5"
	case *cli.IntFlag, *cli.Int64Flag:
		return "want a whole number"
	case *cli.UintFlag, *cli.Uint64Flag:
		return "want a whole number, 0 or more"
	case *cli.BoolFlag:
		return "want true or false"
	}
	return "not a valid value"
}

// nearestFlag is the flag name within two edits of typed (a typo), or of
// which typed is the start ("--algo"), if there is exactly one such best.
func nearestFlag(flags []cli.Flag, typed string) string {
	best, bestDist, ties := "", 3, 0
	for _, f := range flags {
		for _, n := range f.Names() {
			d := editDistance(typed, n)
			if len(typed) >= 3 && strings.HasPrefix(n, typed) {
				d = 1
			}
			switch {
			case d < bestDist:
				best, bestDist, ties = n, d, 1
			case d == bestDist && n != best:
				ties++
			}
		}
	}
	if ties != 1 {
		return ""
	}
	return best
}

// editDistance is Levenshtein's distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// explainFailure adds what to do to the failures of `run` an operator
// causes on a host: an address in use, an address the host does not have
// (its --id or its --members entry wrong), a privileged port, a directory
// a normal user cannot write.
func explainFailure(name string, err error) error {
	if err == nil {
		return nil
	}
	var op *net.OpError
	isNet := errors.As(err, &op)
	var member *daemon.MemberListenError
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("%w: another process has that address (`ss -tulpn` names it; a second %s?): stop it, or give this node another port", err, name)
	case errors.Is(err, syscall.EADDRNOTAVAIL) && errors.As(err, &member):
		// A member binds its own --members entry: an address this
		// machine lacks is another host's (two hosts given one --id, or
		// the wrong one) or a typo in the list.
		return fmt.Errorf("%w: this machine has no such address: --id names this host's own entry of --members, so check that it is this host's ID "+
			"(two hosts given one --id: the one whose address it is not cannot start) and that the entry's address is this host's (`ip -br addr`)", err)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		// Another listener's flag (--metrics, --serve) names the address.
		return fmt.Errorf("%w: this machine has no such address (`ip -br addr` lists its own): give that flag one of them", err)
	case isNet && errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: ports below 1024 need root or CAP_NET_BIND_SERVICE (the unit grants it), or use a port above 1023", err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: run it as root (the %s unit runs it with its own directories), or give --state-dir DIR and --control PATH that this user can write", err, name)
	}
	return err
}
