package app

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/daemon"
)

// TestCommonFlagTypos: what a tired administrator types into the flags
// every daemon shares is refused before anything starts (exit 2), by
// --check too, naming the flag, the value and what is accepted; the
// slips that are harmless (a trailing comma, spaces) still start. The
// test daemon's Build answers "build reached": the flags were accepted.
func TestCommonFlagTypos(t *testing.T) {
	run := func(m string, extra ...string) []string {
		return append([]string{"testd", "run", "--id", "1", "--members", m, "--insecure"}, extra...)
	}
	three := "1=127.0.0.1:7000,2=127.0.0.2:7000,3=127.0.0.3:7000"
	for _, tc := range []struct {
		name string
		args []string
		want string // "" = accepted
	}{
		{"two members at one address", run("1=127.0.0.1:7000,2=127.0.0.2:7000,3=127.0.0.2:7000"),
			"--members: members 2 and 3 both have the address 127.0.0.2:7000: each member needs its own"},
		{"its own address twice", run("1=127.0.0.1:7000,2=127.0.0.1:7000"), "members 1 and 2 both have the address 127.0.0.1:7000"},
		{"one address, IPv4-mapped", run("1=127.0.0.1:7000,2=[::ffff:127.0.0.1]:7000"), "members 1 and 2 both have the address 127.0.0.1:7000"},
		{"every address", run("1=0.0.0.0:7000,2=127.0.0.2:7000"),
			`--members: member 1: address 0.0.0.0:7000: 0.0.0.0 means "every address of this host", which no other member can send to`},
		// Alone too: nobody sends to it, and the port would be open on
		// every network for nothing.
		{"every address, one member", run("1=0.0.0.0:7000"),
			`--members: member 1: address 0.0.0.0:7000: 0.0.0.0 means "every address of this host": a member alone receives from nobody, so that would only open its port on every network; give 127.0.0.1`},
		{"every IPv6 address", run("1=127.0.0.1:7000,2=[::]:7000"), `member 2: address [::]:7000: :: means "every address of this host"`},
		{"a multicast group", run("1=127.0.0.1:7000,2=239.1.1.1:7000"), "member 2: address 239.1.1.1:7000: 239.1.1.1 is not one host's address"},
		{"the broadcast address", run("1=127.0.0.1:7000,2=255.255.255.255:7000"), "255.255.255.255 is not one host's address"},
		{"IPv6 without brackets", run("1=127.0.0.1:7000,2=::1:7000"), `member 2: address "::1:7000": an IPv6 address goes in brackets before its port: [::1]:7000`},
		{"IPv6 without a port", run("1=127.0.0.1:7000,2=fe80::1"), `member 2: address "fe80::1": an IPv6 address goes in brackets before its port: [ADDRESS]:PORT`},
		{"port out of range", run("1=127.0.0.1:7000,2=127.0.0.2:65536"), `member 2: address "127.0.0.2:65536": port must be 1-65535`},
		{"a trailing comma", run(three + ","), ""},
		{"an empty member", run("1=127.0.0.1:7000,,2=127.0.0.2:7000"), ""},
		{"spaces", run("1=127.0.0.1:7000 , 2=127.0.0.2:7000"), ""},
		{"IPv6 in brackets", run("1=127.0.0.1:7000,2=[::1]:7000"), ""},
		{"--state-dir empty", run(three, "--state-dir", ""), "--state-dir is empty (an unset variable?)"},
		{"--control blank", run(three, "--control", " "), "--control is empty (an unset variable?)"},
		{"--cluster empty", run(three, "--cluster", ""), "--cluster is empty (an unset variable?)"},
		{"--tick 0", run(three, "--tick", "0"), "--tick 0s: want 1ms to 1s"},
		{"--tick negative", run(three, "--tick", "-1s"), "--tick -1s: want 1ms to 1s"},
		{"--tick too long", run(three, "--tick", "2s"), "--tick 2s: want 1ms to 1s"},
		{"--tick in range", run(three, "--tick", "1s"), ""},
		{"--metrics, a port alone", run(three, "--metrics", "9177"), `--metrics "9177": want HOST:PORT, e.g. 127.0.0.1:9177`},
		{"--metrics, port 0", run(three, "--metrics", "127.0.0.1:0"), `--metrics "127.0.0.1:0": port "0": want 1-65535`},
		{"--metrics, port out of range", run(three, "--metrics", "127.0.0.1:99999"), `--metrics "127.0.0.1:99999": port "99999": want 1-65535`},
		{"--metrics, mistyped IP", run(three, "--metrics", "127.0.1:9177"), `--metrics "127.0.1:9177": "127.0.1" is not an IPv4 address`},
		{"--metrics on every address", run(three, "--metrics", ":9177"), ""},
		{"--metrics on an IPv4 address", run(three, "--metrics", "127.0.0.1:9177"), ""},
		{"--metrics on a name", run(three, "--metrics", "localhost:9177"), ""},
		{"--metrics, IPv6", run(three, "--metrics", "[::1]:9177"), ""},
		{"--multicast-ttl alone", run(three, "--multicast-ttl", "5"), "--multicast-ttl is only used with --multicast"},
		{"--interface that is not here", run(three, "--multicast", "239.1.1.1:7199", "--interface", "nosuch0"),
			"--interface \"nosuch0\": no such network interface on this host"},
		{"--multicast on lo", run(three, "--multicast", "239.1.1.1:7199", "--interface", "lo", "--multicast-ttl", "0"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, check := range []bool{false, true} {
				args := tc.args
				if check {
					args = append(append([]string{}, args...), "--check")
				}
				var stderr bytes.Buffer
				a := testApp()
				a.Writer, a.ErrWriter = &bytes.Buffer{}, &stderr
				code := Run(a, args, &stderr)
				want, wantCode := tc.want, 2
				if want == "" {
					want = "build reached"
				}
				if code != wantCode || !strings.Contains(stderr.String(), want) {
					t.Errorf("%q: exit %d, stderr %q; want %d and %q", args[2:], code, stderr.String(), wantCode, want)
				}
			}
		})
	}
}

// TestCheckRefusesWhatTheStartRefuses: `run --check` said a
// configuration would start when the daemon's own checks, at start,
// refused it (two members at one address, a --tick out of range): it now
// applies them (here to a setting a binary's Build made).
func TestCheckRefusesWhatTheStartRefuses(t *testing.T) {
	for _, tc := range []struct {
		tick time.Duration
		code int
		want string
	}{
		{2 * time.Second, 1, "tick interval 2s out of range 1ms..1s"},
		{20 * time.Millisecond, 0, "testd would run as member 1 of 1"},
	} {
		a := New(Spec{Name: "testd", Build: func(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
			cfg.TickInterval = tc.tick
			SteadyClock(cfg)
			return nil, nil
		}})
		var stdout, stderr bytes.Buffer
		a.Writer, a.ErrWriter = &stdout, &stderr
		code := Run(a, []string{"testd", "run", "--id", "1", "--members", "1=127.0.0.1:7000", "--check"}, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("tick %v: exit %d, stdout %q, stderr %q; want %d and %q", tc.tick, code, stdout.String(), stderr.String(), tc.code, tc.want)
		}
	}
}

// TestMajorityWarning: an even member count, legal, is warned of where a
// majority is needed, saying what it survives and what would do better.
func TestMajorityWarning(t *testing.T) {
	for n, want := range map[int]string{
		1: "",
		2: "2 members, and the test needs a majority (2 of 2): the loss of either member stops it; 3 members survive one failure",
		3: "",
		4: "4 members, and the test needs a majority (3 of 4): it survives 1 failed member, as 3 members would; an odd count (3 or 5) is the usual choice",
		5: "",
		6: "6 members, and the test needs a majority (4 of 6): it survives 2 failed members, as 5 members would; an odd count (5 or 7) is the usual choice",
	} {
		if got := MajorityWarning(n, "the test"); !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("%d members: %q, want %q", n, got, want)
		}
	}
}

// TestCheckPrintsWarnings: what a binary warns of at start, --check
// prints too.
func TestCheckPrintsWarnings(t *testing.T) {
	a := New(Spec{Name: "testd", Build: func(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
		SteadyClock(cfg)
		cfg.Warnings = append(cfg.Warnings, MajorityWarning(len(cfg.Members), "the test"))
		return nil, nil
	}})
	var stdout, stderr bytes.Buffer
	a.Writer, a.ErrWriter = &stdout, &stderr
	code := Run(a, []string{"testd", "run", "--id", "1", "--members", "1=127.0.0.1:7000,2=127.0.0.2:7000", "--insecure", "--check"}, &stderr)
	if want := "warning: 2 members, and the test needs a majority"; code != 0 || !strings.Contains(stdout.String(), want) {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout.String(), stderr.String(), want)
	}
}

// TestMemberNameWithSeveralAddresses: a member's name that resolves to
// more than one address was taken as its first (the resolver's order,
// which round-robin DNS rotates and two hosts' files may not share); it is
// refused naming the addresses, by --check too. One address given twice
// (two sources, or IPv4-mapped) is one address. The resolver is a fake:
// no DNS is asked.
func TestMemberNameWithSeveralAddresses(t *testing.T) {
	defer func(f func(context.Context, string) ([]netip.Addr, error)) { lookupIP4 = f }(lookupIP4)
	lookupIP4 = func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "twohomed.lab.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.2")}, nil
		case "twice.lab.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("::ffff:127.0.0.2")}, nil
		}
		return nil, fmt.Errorf("no such host %q (the test's resolver)", host)
	}
	for _, tc := range []struct {
		members, want string
	}{
		{"1=127.0.0.1:7000,2=twohomed.lab.test:7000,3=127.0.0.4:7000",
			`--members: member 2: name "twohomed.lab.test" resolves to 2 addresses (127.0.0.2, 127.0.0.3): which one is taken depends on the resolver's order, which may differ from host to host: give the member's address, or a name with only that one`},
		{"1=127.0.0.1:7000,2=twice.lab.test:7000,3=127.0.0.4:7000", "build reached"},
	} {
		for _, check := range []bool{false, true} {
			args := []string{"testd", "run", "--id", "1", "--members", tc.members, "--insecure"}
			if check {
				args = append(args, "--check")
			}
			var stderr bytes.Buffer
			a := testApp()
			a.Writer, a.ErrWriter = &bytes.Buffer{}, &stderr
			if code := Run(a, args, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("%q: exit %d, stderr %q; want 2 and %q", args[2:], code, stderr.String(), tc.want)
			}
		}
	}
}
