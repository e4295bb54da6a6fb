// Package docdiagram keeps the docs' space-time diagrams current: one per
// algorithm family (docs/diagrams/*.svg, shown in docs/teaching.md), each
// drawn by the test that replays its notes scenario. The test hands its
// drawing to Check, which compares it with the file in docs/ and, with
// -rewrite (the scenario scripts' flag), writes it anew.
//
//	go test ./internal/diagram -run 'TestScenarioDiagrams|TestBerkeleyDocDiagram' -rewrite
//	go test ./pkg/mutex/permission -run TestScenarios/ra_notes -rewrite
//	go test ./pkg/order -run TestScenarios/causal -rewrite
package docdiagram

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/synclab/synclab/internal/testkit/scenario"
)

// Dir is where the diagrams go, from the module's root.
const Dir = "docs/diagrams"

// Check compares svg with docs/diagrams/NAME.svg (or writes it, with
// -rewrite): a drawing that changed fails the test until the file is
// regenerated and the change looked at.
func Check(t testing.TB, name string, svg []byte) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, Dir, name+".svg")
	if *scenario.Rewrite {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, svg, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the docs' diagram: %v (run this test with -rewrite to draw it)", err)
	}
	if !bytes.Equal(svg, want) {
		t.Errorf("%s/%s.svg is not the drawing of its scenario any more: run this test with -rewrite and look at the new drawing", Dir, name)
	}
}

// moduleRoot is the module's root: three directories above this file.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("docdiagram: cannot tell where its source is")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", ".."), nil
}
