package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/app"
)

const root = "../../.."

// pending is where other branches leave notes for the lead to fold in.
const pending = "docs/pending/"

// markdown lists the pages checked: README.md and docs/ (not pending/),
// relative to the repository.
func markdown(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && rel+"/" == pending {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	heading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// page is what the checks need of a Markdown file: its links (with their
// line numbers) and its anchors.
type page struct {
	links   []link
	anchors map[string]bool
	// openFence is the line of a code fence never closed (0: none): the
	// rest of the page would render as code.
	openFence int
}

type link struct {
	line   int
	target string
}

func parse(t *testing.T, rel string) page {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	inFence := false
	for i, line := range strings.Split(string(b), "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			if inFence {
				p.openFence = i + 1
			} else {
				p.openFence = 0
			}
			continue
		}
		if inFence {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			p.anchors[m[1]] = true
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			// A heading's text as GitHub reads it: links become their text.
			text := inlineLink.ReplaceAllString(m[2], "$1")
			a := app.Anchor(text)
			if n := seen[a]; n > 0 {
				p.anchors[fmt.Sprintf("%s-%d", a, n)] = true
			} else {
				p.anchors[a] = true
			}
			seen[a]++
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			p.links = append(p.links, link{i + 1, m[1]})
			continue
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			p.links = append(p.links, link{i + 1, m[2]})
		}
	}
	return p
}

// resolve returns the repository path and anchor a relative link of page
// from points to, or ok false for a link outside (a URL, mail).
func resolve(from, target string) (path, anchor string, ok bool) {
	if u, err := url.Parse(target); err != nil || u.Scheme != "" || strings.HasPrefix(target, "//") {
		return "", "", false
	}
	path, anchor, _ = strings.Cut(target, "#")
	if path == "" {
		return from, anchor, true
	}
	if unesc, err := url.PathUnescape(path); err == nil {
		path = unesc
	}
	return filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(from), path))), anchor, true
}

// TestLinksResolve: every relative link of README.md and docs/ names a
// file or directory inside the repository, and every anchor a heading
// (or an <a id>) of the page it points to; every code fence closes.
func TestLinksResolve(t *testing.T) {
	pages := map[string]page{}
	for _, rel := range markdown(t) {
		pages[rel] = parse(t, rel)
	}
	for _, rel := range slices.Sorted(func(yield func(string) bool) {
		for k := range pages {
			if !yield(k) {
				return
			}
		}
	}) {
		if n := pages[rel].openFence; n > 0 {
			t.Errorf("%s:%d: a code fence opens here and never closes: the rest of the page renders as code", rel, n)
		}
		for _, l := range pages[rel].links {
			path, anchor, ok := resolve(rel, l.target)
			if !ok {
				continue
			}
			if path == ".." || strings.HasPrefix(path, "../") || filepath.IsAbs(path) {
				t.Errorf("%s:%d: %s leaves the repository: a clone does not have it", rel, l.line, l.target)
				continue
			}
			if _, err := os.Stat(filepath.Join(root, path)); err != nil {
				t.Errorf("%s:%d: %s: no such file in the repository", rel, l.line, l.target)
				continue
			}
			if anchor == "" {
				continue
			}
			target, ok := pages[path]
			if !ok {
				if !strings.HasSuffix(path, ".md") {
					t.Errorf("%s:%d: %s: an anchor into a file that is not Markdown", rel, l.line, l.target)
					continue
				}
				target = parse(t, path)
			}
			if !target.anchors[anchor] {
				t.Errorf("%s:%d: %s: %s has no heading #%s", rel, l.line, l.target, path, anchor)
			}
		}
	}
}

// TestReadmeIsShort: the README a newcomer finishes.
func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 300 {
		t.Errorf("README.md has %d lines: keep it to 300 at most and move the rest under docs/", n)
	}
}

// TestEveryFlagTwoClicksAway: each binary's command reference, which
// lists every flag, is linked from README.md or from a page README.md
// links to.
func TestEveryFlagTwoClicksAway(t *testing.T) {
	cmds, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	reach := map[string]int{"README.md": 0}
	frontier := []string{"README.md"}
	for depth := 1; depth <= 2; depth++ {
		var next []string
		for _, from := range frontier {
			for _, l := range parse(t, from).links {
				path, _, ok := resolve(from, l.target)
				if !ok || !strings.HasSuffix(path, ".md") {
					continue
				}
				if _, seen := reach[path]; !seen {
					if _, err := os.Stat(filepath.Join(root, path)); err == nil {
						reach[path] = depth
						next = append(next, path)
					}
				}
			}
		}
		frontier = next
	}
	for _, c := range cmds {
		ref := "docs/reference/" + c.Name() + ".md"
		if _, ok := reach[ref]; !ok {
			t.Errorf("%s (every flag of %s) is more than two links away from README.md", ref, c.Name())
		}
	}
}

// notesByNumber finds the course notes named by their file or seed
// number: "seed 004", "seeds 000, 001", "seeds/", "ra_notes_002".
var notesByNumber = regexp.MustCompile(`(?i)\bseeds?\s+0\d\d\b|\bseeds/|notes_0\d\d\b|\b0\d\d_[0-9a-f]{16}\b`)

// TestNotesNamedByWhatTheyAre: help texts, docs, comments and scenario
// files call the course notes by what they are.
func TestNotesNamedByWhatTheyAre(t *testing.T) {
	self, _ := filepath.Abs("doccheck_test.go")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || rel+"/" == pending || rel == "dist" {
				return filepath.SkipDir
			}
			return nil
		}
		if abs, _ := filepath.Abs(p); abs == self {
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".md", ".sh", ".txt", ".service", ".example":
		default:
			if filepath.Base(filepath.Dir(p)) != "deb" { // packaging/deb's scripts
				return nil
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := notesByNumber.FindString(line); m != "" {
				t.Errorf("%s:%d: %q names the course notes by number: say what they are (\"the notes' chapter on elections\")", rel, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// daemons are the binaries whose command reference docs/reference/NAME.md
// is the binary's own output (each cmd/NAME's TestReferenceDocs keeps it
// so): the flags a page may name are read from there, which costs no
// build.
var daemons = []string{"timed", "mutexd", "electd", "orderd"}

// reference maps a command, "NAME COMMAND..." ("electd trace start"), to
// its flags and their defaults as the reference lists them ("" for none).
type reference map[string]map[string]string

var (
	refCommand = regexp.MustCompile("^## ((?:timed|mutexd|electd|orderd)(?: [a-z-]+)*)\\s*$")
	refRow     = regexp.MustCompile("^\\| `--([a-z0-9-]+)[^`]*` \\|[^|]*\\| `?([^|`]*)`? \\|")
)

func readReference(t *testing.T) reference {
	t.Helper()
	ref := reference{}
	for _, d := range daemons {
		b, err := os.ReadFile(filepath.Join(root, "docs/reference", d+".md"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := ""
		for _, line := range strings.Split(string(b), "\n") {
			if m := refCommand.FindStringSubmatch(line); m != nil {
				cmd = m[1]
				ref[cmd] = map[string]string{}
				continue
			}
			if strings.HasPrefix(line, "## ") {
				cmd = ""
			}
			if m := refRow.FindStringSubmatch(line); m != nil && cmd != "" {
				ref[cmd][m[1]] = strings.TrimSpace(m[2])
			}
		}
		if len(ref[d+" run"]) < 10 {
			t.Fatalf("docs/reference/%s.md: %d flags read for %s run: the format changed, and the check would read nothing", d, len(ref[d+" run"]), d)
		}
	}
	return ref
}

// notFlags are options a page names on purpose although no binary has
// them (page, then the flag).
var notFlags = map[[2]string]bool{
	{"docs/electd.md", "priority"}: true, // "a per-node --priority ... is deliberately not offered"
}

var (
	flagWord   = regexp.MustCompile(`^--([a-z][a-z0-9-]*)`)
	scriptFlag = regexp.MustCompile(`(?:^|[\s\[|(])--([a-z][a-z0-9-]+)`)
)

// scriptFlags are the long options the scripts take (and pass on):
// a page's bare `--dry-run` may be install.sh's.
func scriptFlags(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "scripts", "*.sh"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts/*.sh: %v", err)
	}
	flags := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range scriptFlag.FindAllStringSubmatch(string(b), -1) {
			flags[m[1]] = true
		}
	}
	return flags
}

// TestNamedFlagsExist: a flag README.md or a page of docs/ names exists.
// A command written out (`electd run --probe 0`, also in a code block)
// must have each flag it is given; a bare `--flag` in the text must be a
// flag of one of the daemons (or, outside a daemon's own page, of a
// script); `--berkeley-` stands for the flags it begins. docs/reference/
// is the binaries' own output, and docs/benchmarks/ records runs of
// older builds as they were run.
func TestNamedFlagsExist(t *testing.T) {
	ref := readReference(t)
	scripts := scriptFlags(t)
	anyDaemon := func(name string, daemon string) bool {
		for cmd, flags := range ref {
			if daemon != "" && !strings.HasPrefix(cmd, daemon+" ") {
				continue
			}
			for f := range flags {
				if f == name || strings.HasSuffix(name, "-") && strings.HasPrefix(f, name) {
					return true
				}
			}
		}
		return false
	}
	for _, rel := range markdown(t) {
		if strings.HasPrefix(rel, "docs/reference/") || strings.HasPrefix(rel, "docs/benchmarks/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		inFence := false
		for i, line := range strings.Split(string(b), "\n") {
			if fence.MatchString(line) {
				inFence = !inFence
				continue
			}
			spans := []string{line}
			if !inFence {
				spans = nil
				for _, s := range codeSpan.FindAllString(line, -1) {
					spans = append(spans, strings.Trim(s, "`"))
				}
			}
			for _, s := range spans {
				words := strings.Fields(s)
				if len(words) == 0 {
					continue
				}
				if slices.Contains(daemons, words[0]) {
					checkCommandLine(t, ref, rel, i+1, s, words)
					continue
				}
				m := flagWord.FindStringSubmatch(words[0])
				if inFence || m == nil || m[1] == "help" || notFlags[[2]string{rel, m[1]}] {
					continue
				}
				if !anyDaemon(m[1], "") && !scripts[m[1]] {
					t.Errorf("%s:%d: `%s`: no daemon or script has a flag --%s", rel, i+1, s, m[1])
				}
			}
		}
	}
}

// checkCommandLine checks the flags given to a daemon's command written
// out, up to the end of its options ("--"), a comment or a pipe.
func checkCommandLine(t *testing.T, ref reference, rel string, line int, s string, words []string) {
	t.Helper()
	cmd, j := words[0], 1
	for ; j < len(words); j++ {
		if _, ok := ref[cmd+" "+words[j]]; !ok {
			break
		}
		cmd += " " + words[j]
	}
	for _, w := range words[j:] {
		if w == "--" || w == "#" || w == "|" || w == "&&" || w == ";" {
			return
		}
		m := flagWord.FindStringSubmatch(w)
		if m == nil || m[1] == "help" {
			continue
		}
		if cmd == words[0] {
			return // the binary alone, or a command of another program
		}
		if _, ok := ref[cmd][m[1]]; !ok {
			t.Errorf("%s:%d: `%s`: %s has no flag --%s", rel, line, s, cmd, m[1])
		}
	}
}

var cellFlag = regexp.MustCompile("`--([a-z0-9-]+)[^`]*`")

// TestFlagTablesDefaults: the flag tables of each daemon's page
// (docs/NAME.md: "| `--flag D` | default | meaning |", several flags with
// their defaults in order, comma-separated) give the defaults the binary
// has. A default the reference leaves empty (a zero, none, off, or one
// that depends on another flag) is for the page's words to explain.
func TestFlagTablesDefaults(t *testing.T) {
	ref := readReference(t)
	rows := 0
	for _, d := range daemons {
		rel := "docs/" + d + ".md"
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "| `--") {
				continue
			}
			cells := strings.Split(line, " | ")
			if len(cells) < 3 {
				continue
			}
			rows++
			flags := cellFlag.FindAllStringSubmatch(cells[0], -1)
			defaults := strings.Split(cells[1], ", ")
			for k, m := range flags {
				var stated string
				if len(defaults) == len(flags) {
					stated = defaults[k]
				}
				if msg := checkDefault(ref, d, m[1], stated); msg != "" {
					t.Errorf("%s:%d: --%s: %s", rel, i+1, m[1], msg)
				}
			}
		}
	}
	if rows < 40 {
		t.Errorf("%d flag table rows read in the daemons' pages: the tables' format changed, and the check reads next to nothing", rows)
	}
}

// checkDefault says what is wrong with the default a page states for a
// flag of daemon d, or "". stated is its table cell ("" when the cell
// does not split per flag).
func checkDefault(ref reference, d, flag, stated string) string {
	var defaults []string
	for cmd, flags := range ref {
		if !strings.HasPrefix(cmd, d+" ") {
			continue
		}
		def, ok := flags[flag]
		if !ok {
			continue
		}
		if def == "" || stated == "" || sameDefault(def, stated) {
			return ""
		}
		defaults = append(defaults, cmd+": "+def)
	}
	if defaults == nil {
		return d + " has no such flag"
	}
	slices.Sort(defaults)
	return "the page says " + stated + ", the binary's default is " + strings.Join(defaults, "; ")
}

// sameDefault compares a reference's default with a page's cell: its
// first word, without backquotes, durations by their value (1m is 1m0s).
func sameDefault(def, cell string) bool {
	words := strings.Fields(strings.ReplaceAll(cell, "`", ""))
	if len(words) == 0 {
		return false
	}
	w := strings.TrimRight(words[0], ",;")
	if w == def {
		return true
	}
	a, errA := time.ParseDuration(strings.ReplaceAll(def, "µ", "u"))
	b, errB := time.ParseDuration(strings.ReplaceAll(w, "µ", "u"))
	return errA == nil && errB == nil && a == b
}

// warnSource is what the daemons' source says of the events they log at
// WARN, read from its syntax: no build, and no list to keep by hand.
type warnSource struct {
	// consts: a package directory's string constants.
	consts map[string]map[string]string
	// dirs: the directories of an import path's last element.
	dirs  map[string][]string
	files []parsedFile
	// names: each event name logged at WARN, with where it was found.
	names map[string]string
	// params: a function whose parameter becomes a WARN event's name
	// (name and parameter index): its callers' arguments are the names.
	params map[string][]int
}

type parsedFile struct {
	dir     string
	f       *ast.File
	imports map[string]string // name in the file -> directory
}

const module = "github.com/synclab/synclab/"

func readWarnSource(t *testing.T) *warnSource {
	t.Helper()
	ws := &warnSource{consts: map[string]map[string]string{}, dirs: map[string][]string{},
		names: map[string]string{}, params: map[string][]int{}}
	fset := token.NewFileSet()
	for _, top := range []string{"cmd", "internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel == "internal/testkit" {
					return filepath.SkipDir // tests' kits log nothing an operator sees
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			dir := filepath.ToSlash(filepath.Dir(rel))
			pf := parsedFile{dir: dir, f: f, imports: map[string]string{}}
			for _, im := range f.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				if !strings.HasPrefix(path, module) {
					continue
				}
				name := filepath.Base(path)
				if im.Name != nil {
					name = im.Name.Name
				}
				pf.imports[name] = strings.TrimPrefix(path, module)
			}
			ws.files = append(ws.files, pf)
			if ws.consts[dir] == nil {
				ws.consts[dir] = map[string]string{}
			}
			for _, decl := range f.Decls {
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								ws.consts[dir][n.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, pf := range ws.files {
		ws.scan(fset, pf)
	}
	// The callers of a function whose parameter names a WARN event.
	for _, pf := range ws.files {
		ast.Inspect(pf.f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			for _, i := range ws.params[funcName(call.Fun)] {
				if i < len(call.Args) {
					if v, ok := ws.resolve(pf, call.Args[i]); ok {
						ws.names[v] = fset.Position(call.Pos()).String()
					}
				}
			}
			return true
		})
	}
	return ws
}

func funcName(e ast.Expr) string {
	switch f := e.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// resolve returns the string an expression names: a literal, or a
// constant of this package or an imported one of the module.
func (ws *warnSource) resolve(pf parsedFile, e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			v, err := strconv.Unquote(x.Value)
			return v, err == nil
		}
	case *ast.Ident:
		v, ok := ws.consts[pf.dir][x.Name]
		return v, ok
	case *ast.SelectorExpr:
		if pkg, ok := x.X.(*ast.Ident); ok {
			if dir, ok := pf.imports[pkg.Name]; ok {
				v, ok := ws.consts[dir][x.Sel.Name]
				return v, ok
			}
		}
	}
	return "", false
}

func isTrue(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "true"
}

// scan finds in one file the places a WARN event is made: an event or a
// notice literal with Warn: true (or Warn set from a variable) and its
// Name or Key; an event made by c.event(NAME, ...) then marked .Warn =
// true; an alert reported at slog.LevelWarn with its condition. A name
// that is a parameter of the function makes that function's callers'
// arguments the names (the cores' warn helpers, LateGrants.Report).
func (ws *warnSource) scan(fset *token.FileSet, pf parsedFile) {
	add := func(fn *ast.FuncDecl, e ast.Expr, at token.Pos) {
		if v, ok := ws.resolve(pf, e); ok {
			ws.names[v] = fset.Position(at).String()
			return
		}
		if id, ok := e.(*ast.Ident); ok && fn != nil {
			i := 0
			for _, field := range fn.Type.Params.List {
				for _, n := range field.Names {
					if n.Name == id.Name {
						ws.params[fn.Name.Name] = append(ws.params[fn.Name.Name], i)
						return
					}
					i++
				}
			}
		}
		ws.names["?unresolved at "+fset.Position(at).String()] = ""
	}
	for _, decl := range pf.f.Decls {
		fn, _ := decl.(*ast.FuncDecl)
		ast.Inspect(decl, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CompositeLit:
				var name ast.Expr
				warn := false
				for _, el := range x.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					switch k, _ := kv.Key.(*ast.Ident); {
					case k == nil:
					case k.Name == "Warn":
						if id, ok := kv.Value.(*ast.Ident); !ok || id.Name != "false" {
							warn = true
						}
					case k.Name == "Name" || k.Name == "Key":
						name = kv.Value
					}
				}
				if warn && name != nil {
					add(fn, name, x.Pos())
				}
			case *ast.BlockStmt:
				var lastEvent ast.Expr
				for _, st := range x.List {
					if es, ok := st.(*ast.ExprStmt); ok {
						if call, ok := es.X.(*ast.CallExpr); ok && funcName(call.Fun) == "event" && len(call.Args) > 0 {
							lastEvent = call.Args[0]
						}
					}
					if as, ok := st.(*ast.AssignStmt); ok && len(as.Lhs) == 1 && funcName(as.Lhs[0]) == "Warn" && isTrue(as.Rhs[0]) {
						if lastEvent == nil {
							ws.names["?no event before .Warn = true at "+fset.Position(as.Pos()).String()] = ""
						} else {
							add(fn, lastEvent, as.Pos())
						}
					}
				}
			case *ast.CallExpr:
				if funcName(x.Fun) == "report" && len(x.Args) >= 3 {
					if sel, ok := x.Args[1].(*ast.SelectorExpr); ok && sel.Sel.Name == "LevelWarn" {
						add(fn, x.Args[2], x.Pos())
					}
				}
			}
			return true
		})
	}
}

// TestWarnEventsListed: every event a daemon logs at WARN is in the list
// an operator reads, docs/operations.md's Logs ("What an operator must
// act on is WARN or ERROR"), by its name in backquotes or as event=NAME. Events
// raised to WARN by a daemon's EventLevel (electd's demoted with some
// reasons, mutexd's lock_lost) are not found here: the list names them.
func TestWarnEventsListed(t *testing.T) {
	ws := readWarnSource(t)
	b, err := os.ReadFile(filepath.Join(root, "docs/operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The list: from its lead-in to the journal's priorities after it.
	ops := string(b)
	start := strings.Index(ops, "What an operator must act on is WARN")
	end := strings.Index(ops[max(start, 0):], "Under systemd, stderr")
	if start < 0 || end < 0 {
		t.Fatal(`docs/operations.md: the WARN list ("What an operator must act on is WARN" ... "Under systemd, stderr") is not there`)
	}
	ops = ops[start : start+end]
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range ws.names {
			if !yield(n) {
				return
			}
		}
	})
	if len(names) < 20 {
		t.Fatalf("only %d WARN events found in the source (%v): the ways events are made changed, and this check no longer sees them", len(names), names)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "?") {
			t.Errorf("a WARN event whose name is not a constant: %s", n[1:])
			continue
		}
		if !strings.Contains(ops, "`"+n+"`") && !strings.Contains(ops, "event="+n) {
			t.Errorf("%s: event %q is logged at WARN but docs/operations.md does not list it (Logs: \"What an operator must act on\")", ws.names[n], n)
		}
	}
	// And the other way: an event the list names is one the source has.
	known := map[string]bool{}
	for _, consts := range ws.consts {
		for _, v := range consts {
			known[v] = true
		}
	}
	for _, m := range regexp.MustCompile(`event=([a-z_]+)`).FindAllStringSubmatch(ops, -1) {
		if !known[m[1]] && ws.names[m[1]] == "" {
			t.Errorf("docs/operations.md names event=%s, which no daemon's source declares", m[1])
		}
	}
	t.Logf("%d WARN events: %v", len(names), names)
}
