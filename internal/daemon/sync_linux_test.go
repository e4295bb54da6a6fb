//go:build linux

package daemon

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteDataWritesAtOffset: the raw pwrite writes where it is told,
// leaves the rest of a preallocated file alone, and reports a descriptor
// it cannot write to.
func TestWriteDataWritesAtOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := preallocate(f, 0, 64); err != nil {
		t.Fatal(err)
	}
	if _, err := writeData(f, []byte("record"), 10); err != nil {
		t.Fatal(err)
	}
	if _, err := writeData(f, nil, 20); err != nil {
		t.Fatalf("an empty write: %v", err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 64)
	copy(want[10:], "record")
	if string(got) != string(want) {
		t.Fatalf("file %q, want %q", got, want)
	}
	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	var pe *os.PathError
	if _, err := writeData(ro, []byte("x"), 0); !errors.As(err, &pe) || pe.Op != "pwrite" {
		t.Fatalf("a write to a read-only descriptor: %v, want a pwrite PathError", err)
	}
}

// TestWriteDataBeyond4GiB: an offset that needs more than 32 bits
// reaches the kernel whole. A 32-bit build passes it in two registers (on
// arm and mips an even pair, after a padding one): one register there
// wrote at the offset's low word, or at 0. Run it on 32-bit targets as
// scripts/test.sh says (GOARCH=386 on an amd64 kernel, arm and mips under
// qemu-user).
func TestWriteDataBeyond4GiB(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const off = 1<<32 + 1<<20 + 10 // sparse: the file takes a block
	if _, err := writeData(f, []byte("record"), off); err != nil {
		if errors.Is(err, syscall.EFBIG) {
			t.Skipf("the file system holds no file beyond 4 GiB: %v", err)
		}
		t.Fatal(err)
	}
	got := make([]byte, 6)
	if _, err := f.ReadAt(got, off); err != nil || string(got) != "record" {
		t.Fatalf("at %d: %q %v, want \"record\"", int64(off), got, err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != off+6 {
		t.Fatalf("size %d, want %d: the write went elsewhere", fi.Size(), int64(off+6))
	}
}

// TestLogWritesAreRaw: the log's write and its fdatasync, made for every
// entry a member acknowledges, are raw syscalls, and appendRecords makes
// them through writeData and syncData only. One through the scheduler's
// syscall path (os.File.WriteAt, Sync, unix.Pwrite) wakes the runtime's
// monitor thread on a daemon idle since the last multicast, which then
// polls every 20 us: 20% of a bench member's CPU before the write was
// made raw (docs/benchmarks/2026-12-06-order-frames-path.md).
func TestLogWritesAreRaw(t *testing.T) {
	fset := token.NewFileSet()
	funcs := map[string]*ast.FuncDecl{}
	for _, file := range []string{"sync_linux.go", "corelog.go"} {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil || ok && fn.Name.Name == "appendRecords" {
				funcs[fn.Name.Name] = fn
			}
		}
	}
	calls := func(fn *ast.FuncDecl) map[string]bool {
		out := map[string]bool{}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				switch f := c.Fun.(type) {
				case *ast.SelectorExpr:
					out[f.Sel.Name] = true
				case *ast.Ident:
					out[f.Name] = true
				}
			}
			return true
		})
		return out
	}
	for _, name := range []string{"writeData", "syncData"} {
		fn, ok := funcs[name]
		if !ok {
			t.Fatalf("%s not found in sync_linux.go", name)
		}
		c := calls(fn)
		if !c["RawSyscall"] && !c["RawSyscall6"] {
			t.Errorf("%s makes no raw syscall", name)
		}
		for _, bad := range []string{"Syscall", "Syscall6", "WriteAt", "Pwrite", "Sync", "Fdatasync"} {
			if c[bad] {
				t.Errorf("%s calls %s, through the scheduler", name, bad)
			}
		}
	}
	ar, ok := funcs["appendRecords"]
	if !ok {
		t.Fatal("appendRecords not found in corelog.go")
	}
	c := calls(ar)
	if !c["writeData"] || !c["syncData"] {
		t.Errorf("appendRecords does not write through writeData and syncData")
	}
	for _, bad := range []string{"WriteAt", "Write", "Sync", "Pwrite", "Fdatasync"} {
		if c[bad] {
			t.Errorf("appendRecords calls %s, through the scheduler", bad)
		}
	}
}
