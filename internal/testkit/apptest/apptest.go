// Package apptest checks what a synclab binary says about itself: its
// manual page's examples name real commands and flags, every exit status
// its source can return is in EXIT STATUS, the page is clean roff, and
// the repository's command reference (docs/reference/NAME.md) is the
// binary's own output. Each cmd/NAME's tests call CheckDocs with its app:
//
//	func TestReferenceDocs(t *testing.T) { apptest.CheckDocs(t, newApp()) }
//
// Run with -docs.update to rewrite docs/reference/NAME.md after changing
// a command or a flag.
package apptest

import (
	"bytes"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
)

var update = flag.Bool("docs.update", false, "rewrite docs/reference/NAME.md from the binary's command line")

// CheckDocs runs every check on a, the app of the binary whose package
// is the test's working directory (cmd/NAME).
func CheckDocs(t *testing.T, a *cli.App) {
	t.Helper()
	var page bytes.Buffer
	if err := app.WriteMan(&page, a); err != nil {
		t.Fatal(err)
	}
	t.Run("examples", func(t *testing.T) { checkExamples(t, a, page.String()) })
	t.Run("exits", func(t *testing.T) { checkExits(t, a.Name, page.String()) })
	t.Run("roff", func(t *testing.T) { checkRoff(t, page.String()) })
	t.Run("reference", func(t *testing.T) { checkReference(t, a) })
}

// checkExamples: every example runs one of a's commands with that
// command's flags only, so an example cannot outlive a renamed flag.
func checkExamples(t *testing.T, a *cli.App, page string) {
	ex := page[strings.Index(page, ".SH EXAMPLES"):]
	if n := strings.Count(ex, ".nf\n"); n < 6 {
		t.Errorf("EXAMPLES holds %d examples: want the binary's own besides the 5 every binary shares", n)
	}
	for _, cmd := range exampleLines(ex) {
		if err := resolve(a, strings.Fields(cmd)); err != "" {
			t.Errorf("example %q: %s", cmd, err)
		}
	}
}

// exampleLines returns the command lines of EXAMPLES, unescaped.
func exampleLines(ex string) []string {
	var out []string
	for _, block := range strings.Split(ex, ".nf\n.RS\n")[1:] {
		line, _, _ := strings.Cut(block, "\n")
		out = append(out, strings.NewReplacer(`\-`, "-", `\e`, `\`, `\&`, "").Replace(line))
	}
	return out
}

// resolve walks words through a's command tree and says what is wrong
// with them, or "".
func resolve(a *cli.App, words []string) string {
	if len(words) == 0 || words[0] != a.Name {
		return "does not start with " + a.Name
	}
	cmds := a.Commands
	var cmd *cli.Command
	i := 1
	for ; i < len(words); i++ {
		next := findCommand(cmds, words[i])
		if next == nil {
			break
		}
		cmd, cmds = next, next.Subcommands
	}
	if cmd == nil {
		return "names no command of " + a.Name
	}
	for _, w := range words[i:] {
		if w == "--" {
			break // the wrapped command's own arguments
		}
		if !strings.HasPrefix(w, "-") || w == "-" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) }) {
			return "flag " + w + " is not a flag of " + a.Name + " " + cmd.Name
		}
	}
	return ""
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

// checkExits finds every exit status the package's source can return
// (app.ExitError{Code: ...}) and wants each in EXIT STATUS. A code is a
// number, a named constant, 128 plus a signal, or a variable set from
// numbers in the same function.
func checkExits(t *testing.T, name, page string) {
	section := page[strings.Index(page, ".SH EXIT STATUS"):strings.Index(page, ".SH EXAMPLES")]
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\.B (.+)$`).FindAllStringSubmatch(section, -1) {
		documented[strings.ReplaceAll(m[1], `\-`, "-")] = true
	}
	codes := exitCodes(t, ".")
	if len(codes) == 0 {
		t.Fatalf("no app.ExitError in %s's source: the check reads nothing", name)
	}
	for _, c := range codes {
		if !documented[c.code] {
			t.Errorf("%s: %s can exit %s, which EXIT STATUS does not list (add it to the Spec's Exits)", c.where, name, c.code)
		}
	}
}

type foundCode struct {
	code  string
	where string
}

// exitCodes parses the Go files of the package in dir.
func exitCodes(t *testing.T, dir string) []foundCode {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	var parsed []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, af)
		ast.Inspect(af, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.INT {
							consts[id.Name] = lit.Value
						}
					}
				}
			}
			return true
		})
	}
	var out []foundCode
	for _, af := range parsed {
		for _, decl := range af.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			// Numbers assigned to each variable in this function.
			assigned := map[string][]string{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if !ok || len(as.Lhs) != len(as.Rhs) {
					return true
				}
				for i, l := range as.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						if lit, ok := as.Rhs[i].(*ast.BasicLit); ok && lit.Kind == token.INT {
							assigned[id.Name] = append(assigned[id.Name], lit.Value)
						}
					}
				}
				return true
			})
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				cl, ok := n.(*ast.CompositeLit)
				if !ok || !isExitError(cl.Type) {
					return true
				}
				where := fset.Position(cl.Pos()).String()
				for _, el := range cl.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok || kv.Key.(*ast.Ident).Name != "Code" {
						continue
					}
					for _, c := range codeValues(kv.Value, consts, assigned) {
						out = append(out, foundCode{c, where})
					}
					if len(codeValues(kv.Value, consts, assigned)) == 0 {
						t.Errorf("%s: cannot tell which exit status %s is: give it a constant, or extend apptest", where, types(kv.Value))
					}
				}
				return true
			})
		}
	}
	return out
}

func isExitError(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "ExitError"
}

// codeValues is what an exit code expression can be, as EXIT STATUS
// writes it.
func codeValues(e ast.Expr, consts map[string]string, assigned map[string][]string) []string {
	switch v := e.(type) {
	case *ast.BasicLit:
		return []string{v.Value}
	case *ast.Ident:
		if c, ok := consts[v.Name]; ok {
			return []string{c}
		}
		// A variable: the numbers it was set to here, and, for a child's
		// status passed on, what the command documents as its own.
		out := slices.Clone(assigned[v.Name])
		if len(out) > 0 {
			out = append(out, "CMD's own")
		}
		return out
	case *ast.BinaryExpr:
		if lit, ok := v.X.(*ast.BasicLit); ok && v.Op == token.ADD {
			if n, _ := strconv.Atoi(lit.Value); n == 128 {
				return []string{"128+N"}
			}
		}
	}
	return nil
}

func types(e ast.Expr) string {
	var b bytes.Buffer
	ast.Fprint(&b, token.NewFileSet(), e, nil)
	return strings.Join(strings.Fields(b.String()), " ")
}

// checkRoff runs the page through groff with every warning on.
func checkRoff(t *testing.T, page string) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff is not installed: the page's roff is not checked (apt-get install groff-base)")
	}
	cmd := exec.Command(groff, "-man", "-ww", "-z", "-Tutf8")
	cmd.Stdin = strings.NewReader(page)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("groff -ww: %v\n%s", err, out)
	}
}

// checkReference compares docs/reference/NAME.md with the binary's output.
func checkReference(t *testing.T, a *cli.App) {
	var b bytes.Buffer
	if err := app.WriteMarkdown(&b, a); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "reference", a.Name+".md")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: write it with: go test ./cmd/%s -run TestReferenceDocs -docs.update", err, a.Name)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Errorf("%s is not %s's command line as it is now (a command or flag changed): regenerate it with\n"+
			"    go test ./cmd/%s -run TestReferenceDocs -docs.update\nand commit it", path, a.Name, a.Name)
	}
}
