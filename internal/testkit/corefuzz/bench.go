package corefuzz

import (
	"syscall"
	"testing"
	"time"
)

// BenchPrograms is how many random programs Bench adds to a target's
// seeds and stored corpus, and BenchProgramLen their length: long enough
// that every target's program reaches its step limit, the cost of the
// long programs a fuzzer grows and keeps.
const (
	BenchPrograms   = 64
	BenchProgramLen = 4096
)

// Fuzz is a program target's FuzzX: seeds, then run on what the fuzzer
// makes of them.
func Fuzz(f *testing.F, seeds [][]byte, run func(t testing.TB, in []byte)) {
	for _, in := range seeds {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) { run(t, in) })
}

// Bench runs run, a fuzz target's body, as a benchmark over the target's
// seeds, its stored corpus (testdata/fuzz/<target>) and BenchPrograms
// random programs, round robin, and reports execs/s, and execs/cpu-s: per
// second of the process's CPU time (garbage collection included), the
// figure that holds on a machine shared with other work. It is what the
// fuzzer pays per execution, without its coverage instrumentation (doc.go,
// "What a program costs").
func Bench(b *testing.B, target string, seeds [][]byte, run func(t testing.TB, in []byte)) {
	ins := Inputs(b, target, seeds, BenchPrograms, BenchProgramLen)
	b.ReportAllocs()
	n, cpu0 := 0, cpuTime()
	for b.Loop() {
		run(b, ins[n%len(ins)])
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "execs/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(n)/cpu.Seconds(), "execs/cpu-s")
	}
}

// cpuTime is the CPU time the process used so far (0 if unknown).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
