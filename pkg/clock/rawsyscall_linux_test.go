//go:build linux

package clock

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"golang.org/x/sys/unix"
)

// TestKernelCallsAreRaw: the calls a daemon makes on every tick or frame
// (reading the clock's state, the raw and monotonic clocks) are raw
// syscalls. None of them blocks; one made through the scheduler's syscall
// path (unix.Syscall, and the unix wrappers built on it) wakes the Go
// runtime's monitor thread whenever it sleeps, which an idle daemon's
// does between frames, and sets it polling: measured as half of an idle
// electd leader's context switches (docs/benchmarks/2026-12-06-idle.md).
func TestKernelCallsAreRaw(t *testing.T) {
	hot := map[string]bool{"kernelAdjtime": true, "kernelMonotonic": true, "rawNow": true}
	scheduled := map[string]bool{"Syscall": true, "Syscall6": true, "ClockAdjtime": true, "ClockGettime": true, "Adjtimex": true}
	fset := token.NewFileSet()
	found := map[string]bool{}
	for _, file := range []string{"linux.go", "steady_linux.go"} {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || !hot[fn.Name.Name] {
				continue
			}
			found[fn.Name.Name] = true
			raw := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "unix" {
					switch {
					case scheduled[sel.Sel.Name]:
						t.Errorf("%s: %s calls unix.%s, through the scheduler: use unix.RawSyscall", fset.Position(sel.Pos()), fn.Name.Name, sel.Sel.Name)
					case sel.Sel.Name == "RawSyscall" || sel.Sel.Name == "RawSyscall6":
						raw = true
					}
				}
				return true
			})
			if !raw {
				t.Errorf("%s makes no raw syscall", fn.Name.Name)
			}
		}
	}
	for name := range hot {
		if !found[name] {
			t.Errorf("%s not found: keep this list in step with the code", name)
		}
	}
}

// TestKernelAdjtimeReads: the raw clock_adjtime reads the kernel's state
// (unprivileged) and reports the clock's status word as the wrapper did.
func TestKernelAdjtimeReads(t *testing.T) {
	var tx unix.Timex
	state, err := kernelAdjtime(&tx)
	if err != nil {
		t.Fatalf("clock_adjtime read: %v", err)
	}
	if state < unix.TIME_OK || state > unix.TIME_ERROR {
		t.Errorf("clock state %d, not one of TIME_OK..TIME_ERROR", state)
	}
	if tx.Tick == 0 {
		t.Error("clock_adjtime read no tick length")
	}
	if kernelMonotonic() <= 0 {
		t.Error("CLOCK_MONOTONIC read zero")
	}
}
