package sim

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The seed flags are registered on the default flag set when the package is
// initialised, which is before the testing package parses the command line,
// so every test binary that imports sim accepts them, however many packages
// do. (A non-test binary importing sim would show them too: import sim from
// tests only.)
var (
	flagSeed  = flag.Int64("sim.seed", 0, "replay only this simulation seed (0: run the test's seed range)")
	flagSeeds = flag.Int("sim.seeds", 0, "number of seeds for sim.Seeds tests (0: each test's own default)")
	flagSoak  = flag.Bool("soak", false, "soak run: every seeded test runs its soak count of seeds (a nightly run; "+
		"also "+SoakEnv+"=1, which reaches every package of `go test ./...`); -sim.seeds=N overrides both counts")
)

// SoakEnv is the environment variable that makes a test run a soak run, as
// -soak does: `SYNCLAB_SOAK=1 go test ./...` (or `scripts/test.sh
// --soak`) reaches every package, where a flag would be refused by the
// packages that do not define it.
const SoakEnv = "SYNCLAB_SOAK"

// WriteLatencyEnv, set to a duration ("200ms") or a range ("100ms-300ms"),
// gives every node added from then on that write latency
// (Sim.SetWriteLatency), so that any simulator test runs with slow
// disks: `SYNCLAB_SIM_WRITE_LATENCY=20ms-200ms go test ./pkg/...`. A test
// that sets its nodes' latency itself overrides it.
const WriteLatencyEnv = "SYNCLAB_SIM_WRITE_LATENCY"

// envWriteLatency parses WriteLatencyEnv (0, 0 when unset); a value it
// cannot parse panics, naming the variable: a test run that silently
// ignored it would claim a coverage it does not have.
func envWriteLatency() (min, max time.Duration) {
	v := os.Getenv(WriteLatencyEnv)
	if v == "" {
		return 0, 0
	}
	lo, hi, ranged := strings.Cut(v, "-")
	min, err := time.ParseDuration(lo)
	if err == nil {
		max = min
		if ranged {
			max, err = time.ParseDuration(hi)
		}
	}
	if err != nil || min < 0 || max < min {
		panic(fmt.Sprintf("sim: %s=%q: want a duration (200ms) or a range (100ms-300ms), low first", WriteLatencyEnv, v))
	}
	return min, max
}

// EnvWriteLatency is the write latency WriteLatencyEnv gives every node
// (0, 0: none): for a test whose expectations (timeouts, counts) must be
// derived from the disks it runs on.
func EnvWriteLatency() (min, max time.Duration) { return envWriteLatency() }

// SoakFactor is how many times its default count of seeds a test given to
// Seeds runs in a soak run.
const SoakFactor = 10

// Soak reports whether this is a soak run: -soak, or SYNCLAB_SOAK=1.
func Soak() bool { return *flagSoak || os.Getenv(SoakEnv) == "1" }

// Seeds runs f as a subtest for each of n seeds, 1..n, or SoakFactor times
// as many in a soak run (see SoakSeeds).
func Seeds(t *testing.T, n int, f func(t *testing.T, seed int64)) {
	t.Helper()
	SoakSeeds(t, n, n*SoakFactor, f)
}

// SoakSeeds runs f as a subtest for each of quick seeds, 1..quick, or of
// soak seeds in a soak run (Soak): the default run stays fast, a nightly
// run searches wider. -sim.seeds=N overrides both, -sim.seed=S runs seed
// S only. It stops at the first failing seed and prints the command that
// replays it, so a failure found over hundreds of seeds is one command away
// from a debugger.
func SoakSeeds(t *testing.T, quick, soak int, f func(t *testing.T, seed int64)) {
	t.Helper()
	n := quick
	if Soak() {
		n = soak
	}
	seeds := make([]int64, 0, n)
	switch {
	case *flagSeed != 0:
		seeds = append(seeds, *flagSeed)
	default:
		if *flagSeeds > 0 {
			n = *flagSeeds
		}
		for i := 1; i <= n; i++ {
			seeds = append(seeds, int64(i))
		}
	}
	for _, seed := range seeds {
		if !t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { f(t, seed) }) {
			t.Errorf("replay: go test %s -run '^%s$' -sim.seed=%d", packageDir(), t.Name(), seed)
			return
		}
	}
}

// packageDir names the test's package relative to the module root (tests
// run in their package's directory), or "." if the root is not found.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel) + "/"
		}
		if dir == filepath.Dir(dir) {
			return "."
		}
	}
}
