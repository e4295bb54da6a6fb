package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
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
// its flags, each with its default as the reference lists it ("" for
// none) and its help text.
type reference map[string]map[string]flagRef

type flagRef struct{ def, help string }

var (
	refCommand = regexp.MustCompile("^## ((?:timed|mutexd|electd|orderd)(?: [a-z-]+)*)\\s*$")
	refRow     = regexp.MustCompile("^\\| `--([a-z0-9-]+)[^`]*` \\|[^|]*\\| `?([^|`]*)`? \\|(.*)\\|\\s*$")
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
				ref[cmd] = map[string]flagRef{}
				continue
			}
			if strings.HasPrefix(line, "## ") {
				cmd = ""
			}
			if m := refRow.FindStringSubmatch(line); m != nil && cmd != "" {
				ref[cmd][m[1]] = flagRef{strings.TrimSpace(m[2]), strings.TrimSpace(m[3])}
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
		for _, sp := range spans(string(b)) {
			if len(sp.words) == 0 {
				continue
			}
			if slices.Contains(daemons, sp.words[0]) {
				checkCommandLine(t, ref, rel, sp)
				continue
			}
			if sp.fenced || !flagWord.MatchString(sp.words[0]) {
				continue
			}
			// Flags given without their command (`--heartbeat 50ms
			// --probe 0`): each is some daemon's or script's.
			for k, w := range sp.words {
				m := flagWord.FindStringSubmatch(w)
				if m == nil || m[1] == "help" || notFlags[[2]string{rel, m[1]}] {
					continue
				}
				if !anyDaemon(m[1], "") && !scripts[m[1]] {
					t.Errorf("%s:%d: `%s`: no daemon or script has a flag --%s", rel, sp.lines[k], sp.text, m[1])
				}
			}
		}
	}
}

// span is a code span of a page, or a line of a code block: its text
// (a span's spaces and line breaks made one space), its words and the
// line each word is on.
type span struct {
	text   string
	words  []string
	lines  []int
	fenced bool
}

var (
	wordRe = regexp.MustCompile(`\S+`)
	// blockStart is a line that begins a block of its own: no code span
	// crosses into it from the line before (a heading, a table row, a
	// list item, a quote, a rule).
	blockStart = regexp.MustCompile(`^\s{0,3}(?:#|\||[-*+]\s|\d+[.)]\s|>|---|\*\*\*)`)
)

// spans returns a page's code spans, read as Markdown does: within a
// paragraph, across its line breaks, and each line of a code block.
func spans(page string) []span {
	var out []span
	var para []string
	paraStart := 0
	flush := func() {
		text := strings.Join(para, "\n")
		for _, loc := range codeSpan.FindAllStringIndex(text, -1) {
			inner := text[loc[0]:loc[1]]
			ticks := len(inner) - len(strings.TrimLeft(inner, "`"))
			inner = strings.Trim(inner, "`")
			sp := span{text: strings.Join(strings.Fields(inner), " ")}
			for _, w := range wordRe.FindAllStringIndex(inner, -1) {
				sp.words = append(sp.words, inner[w[0]:w[1]])
				sp.lines = append(sp.lines, paraStart+strings.Count(text[:loc[0]+ticks+w[0]], "\n"))
			}
			out = append(out, sp)
		}
		para = nil
	}
	inFence := false
	for i, line := range strings.Split(page, "\n") {
		if fence.MatchString(line) {
			flush()
			inFence = !inFence
			continue
		}
		if inFence {
			sp := span{text: line, words: strings.Fields(line), fenced: true}
			for range sp.words {
				sp.lines = append(sp.lines, i+1)
			}
			out = append(out, sp)
			continue
		}
		if strings.TrimSpace(line) == "" || blockStart.MatchString(line) {
			flush()
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if para == nil {
			paraStart = i + 1
		}
		para = append(para, line)
	}
	flush()
	return out
}

// checkCommandLine checks the flags given to a daemon's command written
// out, up to the end of its options ("--"), a comment or a pipe.
func checkCommandLine(t *testing.T, ref reference, rel string, sp span) {
	t.Helper()
	words := sp.words
	cmd, j := words[0], 1
	for ; j < len(words); j++ {
		if _, ok := ref[cmd+" "+words[j]]; !ok {
			break
		}
		cmd += " " + words[j]
	}
	for k := j; k < len(words); k++ {
		w := words[k]
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
			t.Errorf("%s:%d: `%s`: %s has no flag --%s", rel, sp.lines[k], sp.text, cmd, m[1])
		}
	}
}

var cellFlag = regexp.MustCompile("`--([a-z0-9-]+)[^`]*`")

// TestFlagTablesDefaults: the flag tables of each daemon's page
// (docs/NAME.md: "| `--flag D` | default | meaning |", several flags with
// their defaults in order, comma-separated) give the defaults the binary
// has. A default that depends on the algorithm (electd's --heartbeat,
// --probe) is compared by the durations the help text gives as defaults.
// A default the reference leaves empty with no such words (a zero, none,
// off, or one that depends on another flag), or a cell that does not
// split per flag, is for the page's words to explain: those are counted
// in the log.
func TestFlagTablesDefaults(t *testing.T) {
	ref := readReference(t)
	rows, checked := 0, 0
	var skipped []string
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
				switch {
				case len(flags) == 1:
					stated = cells[1]
				case len(defaults) == len(flags):
					stated = defaults[k]
				}
				msg, ok := checkDefault(ref, d, m[1], stated)
				if msg != "" {
					t.Errorf("%s:%d: --%s: %s", rel, i+1, m[1], msg)
				}
				if ok {
					checked++
				} else {
					skipped = append(skipped, d+" --"+m[1])
				}
			}
		}
	}
	if rows < 40 {
		t.Errorf("%d flag table rows read in the daemons' pages: the tables' format changed, and the check reads next to nothing", rows)
	}
	t.Logf("%d table flags' defaults checked, %d not (no default to compare, or a cell for several flags): %v", checked, len(skipped), skipped)
}

// checkDefault says what is wrong with the default a page states for a
// flag of daemon d, or ""; checked says it was compared at all. stated is
// its table cell ("" when the cell does not split per flag).
func checkDefault(ref reference, d, flag, stated string) (msg string, checked bool) {
	var defaults []string
	// found: a command of d has the flag; open: one of them has no
	// default to compare (the page's table may be that command's).
	found, open := false, false
	for cmd, flags := range ref {
		if !strings.HasPrefix(cmd, d+" ") {
			continue
		}
		f, ok := flags[flag]
		if !ok {
			continue
		}
		found = true
		want := f.def
		var same bool
		switch {
		case stated == "":
			open = true
			continue
		case f.def != "":
			same = sameDefault(f.def, stated)
		default:
			per := helpDefaults(f.help)
			if per == nil {
				open = true
				continue
			}
			same = slices.Equal(per, durations(stated))
			want = strings.Join(per, ", ") + " (its help text's defaults)"
		}
		if same {
			return "", true
		}
		defaults = append(defaults, cmd+": "+want)
	}
	if !found {
		return d + " has no such flag", true
	}
	if open {
		return "", false
	}
	slices.Sort(defaults)
	return "the page says " + stated + ", the binary's default is " + strings.Join(defaults, "; "), true
}

var (
	durationRe    = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h)\b`)
	helpDefaultRe = regexp.MustCompile(`(?:\(default |default: )([^)]*)`)
)

// durations are the distinct durations a text names, sorted.
func durations(s string) []string {
	var out []string
	for _, d := range durationRe.FindAllString(s, -1) {
		if v, err := time.ParseDuration(strings.ReplaceAll(d, "µ", "u")); err == nil {
			out = append(out, v.String())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// helpDefaults are the durations a flag's help text gives as its
// defaults, "(default 4ms)" or "default: bully and omega 200ms, ...)":
// those of a default that depends on the algorithm.
func helpDefaults(help string) []string {
	var text []string
	for _, m := range helpDefaultRe.FindAllStringSubmatch(help, -1) {
		text = append(text, m[1])
	}
	return durations(strings.Join(text, " "))
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
	fset *token.FileSet
	// consts: a package directory's constants, with the file that
	// declares each (its imports resolve a constant made of another).
	consts map[string]map[string]constDef
	// funcs: the functions and methods, by funcKey.
	funcs map[funcKey]funcAt
	files []*parsedFile
	// names: each event name logged at WARN, with where it was found.
	names map[string]string
	// events: every event name the source makes, at any level (an event
	// or notice literal's name, a constant named for an event).
	events map[string]bool
	// params: a function whose parameter becomes a WARN event's name
	// (the parameter's index): its callers' arguments are the names.
	params map[funcKey][]int
	// imports: the directories a package's files import.
	imports map[string]map[string]bool
	// levelFuncs: how many EventLevel functions were read.
	levelFuncs int
}

// funcKey names a function as the compiler does: its package's
// directory, its receiver's type ("" for a function) and its name. A
// warn in one package is not another's.
type funcKey struct{ dir, recv, name string }

type funcAt struct {
	pf   *parsedFile
	decl *ast.FuncDecl
}

type constDef struct {
	pf   *parsedFile
	expr ast.Expr
}

type parsedFile struct {
	dir     string
	f       *ast.File
	imports map[string]string // name in the file -> directory
}

const module = "github.com/synclab/synclab/"

func readWarnSource(t *testing.T) *warnSource {
	t.Helper()
	ws := &warnSource{fset: token.NewFileSet(), consts: map[string]map[string]constDef{}, funcs: map[funcKey]funcAt{},
		names: map[string]string{}, events: map[string]bool{}, params: map[funcKey][]int{}, imports: map[string]map[string]bool{}}
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
			f, err := parser.ParseFile(ws.fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ws.add(&parsedFile{dir: filepath.ToSlash(filepath.Dir(rel)), f: f, imports: map[string]string{}})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, pf := range ws.files {
		ws.scan(pf)
		ws.scanEventLevels(pf)
	}
	for _, consts := range ws.consts {
		for name, def := range consts {
			if strings.Contains(strings.ToLower(name), "event") {
				if v, ok := ws.resolve(def.pf, def.expr); ok {
					ws.events[v] = true
				}
			}
		}
	}
	// The callers of a function whose parameter names a WARN event.
	for _, pf := range ws.files {
		ast.Inspect(pf.f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			for _, k := range ws.callees(pf, call.Fun) {
				for _, i := range ws.params[k] {
					if i < len(call.Args) {
						ws.addName(pf, call.Args[i], call.Pos())
					}
				}
			}
			return true
		})
	}
	return ws
}

// add records a file's imports of the module, constants and functions.
func (ws *warnSource) add(pf *parsedFile) {
	for _, im := range pf.f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		if !strings.HasPrefix(path, module) {
			continue
		}
		name := filepath.Base(path)
		if im.Name != nil {
			name = im.Name.Name
		}
		pf.imports[name] = strings.TrimPrefix(path, module)
		if ws.imports[pf.dir] == nil {
			ws.imports[pf.dir] = map[string]bool{}
		}
		ws.imports[pf.dir][pf.imports[name]] = true
	}
	ws.files = append(ws.files, pf)
	if ws.consts[pf.dir] == nil {
		ws.consts[pf.dir] = map[string]constDef{}
	}
	for _, decl := range pf.f.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok {
			ws.funcs[funcKey{pf.dir, recvType(fn), fn.Name.Name}] = funcAt{pf, fn}
			continue
		}
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					ws.consts[pf.dir][n.Name] = constDef{pf, vs.Values[i]}
				}
			}
		}
	}
}

// recvType is the name of a method's receiver's type, "" for a function.
func recvType(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	e := fn.Recv.List[0].Type
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return "?"
		}
	}
}

// callees are the functions a call in pf may reach, read without types:
// f() is pf's package's function f; pkg.F() the imported package's; a
// method call x.M() any method M of pf's package or, exported, of a
// package pf's package imports (x's type is not known here: c.late.Report
// is mutexcount's, imported by another file of the package).
func (ws *warnSource) callees(pf *parsedFile, fun ast.Expr) []funcKey {
	switch f := fun.(type) {
	case *ast.Ident:
		return []funcKey{{pf.dir, "", f.Name}}
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok {
			if dir, ok := pf.imports[x.Name]; ok {
				return []funcKey{{dir, "", f.Sel.Name}}
			}
		}
		var out []funcKey
		for k := range ws.params {
			if k.recv == "" || k.name != f.Sel.Name {
				continue
			}
			if k.dir == pf.dir || ast.IsExported(k.name) && ws.imports[pf.dir][k.dir] {
				out = append(out, k)
			}
		}
		return out
	}
	return nil
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
// constant of this package or an imported one of the module, itself
// made of literals and constants.
func (ws *warnSource) resolve(pf *parsedFile, e ast.Expr) (string, bool) {
	return ws.resolveDepth(pf, e, 0)
}

func (ws *warnSource) resolveDepth(pf *parsedFile, e ast.Expr, depth int) (string, bool) {
	if depth > 20 {
		return "", false // a cycle: the compiler refuses it anyway
	}
	var def constDef
	var ok bool
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			v, err := strconv.Unquote(x.Value)
			return v, err == nil
		}
		return "", false
	case *ast.ParenExpr:
		return ws.resolveDepth(pf, x.X, depth+1)
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return "", false
		}
		a, okA := ws.resolveDepth(pf, x.X, depth+1)
		b, okB := ws.resolveDepth(pf, x.Y, depth+1)
		return a + b, okA && okB
	case *ast.Ident:
		def, ok = ws.consts[pf.dir][x.Name]
	case *ast.SelectorExpr:
		if pkg, isIdent := x.X.(*ast.Ident); isIdent {
			if dir, imported := pf.imports[pkg.Name]; imported {
				def, ok = ws.consts[dir][x.Sel.Name]
			}
		}
	}
	if !ok {
		return "", false
	}
	return ws.resolveDepth(def.pf, def.expr, depth+1)
}

// addName records e, made at pos in pf, as an event name logged at WARN;
// one that is no constant is recorded as such, for the test to refuse.
func (ws *warnSource) addName(pf *parsedFile, e ast.Expr, pos token.Pos) {
	if v, ok := ws.resolve(pf, e); ok {
		ws.names[v] = ws.fset.Position(pos).String()
		ws.events[v] = true
		return
	}
	ws.names["?unresolved at "+ws.fset.Position(pos).String()] = ""
}

func isTrue(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "true"
}

func isLevelWarn(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "LevelWarn"
}

// scan finds in one file the places a WARN event is made: an event or a
// notice literal with Warn: true (or Warn set from a variable) and its
// Name or Key; an event made by c.event(NAME, ...) then marked .Warn =
// true; an alert reported at slog.LevelWarn with its condition. A name
// that is a parameter of the function makes that function's callers'
// arguments the names (the cores' warn helpers, LateGrants.Report).
func (ws *warnSource) scan(pf *parsedFile) {
	add := func(fn *ast.FuncDecl, e ast.Expr, at token.Pos) {
		if id, ok := e.(*ast.Ident); ok && fn != nil {
			i := 0
			for _, field := range fn.Type.Params.List {
				for _, n := range field.Names {
					if n.Name == id.Name {
						k := funcKey{pf.dir, recvType(fn), fn.Name.Name}
						ws.params[k] = append(ws.params[k], i)
						return
					}
					i++
				}
			}
		}
		ws.addName(pf, e, at)
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
				if name == nil {
					break
				}
				if warn {
					add(fn, name, x.Pos())
				} else if tn := funcName(x.Type); tn == "Event" || tn == "Notice" {
					if v, ok := ws.resolve(pf, name); ok {
						ws.events[v] = true
					}
				}
			case *ast.BlockStmt:
				var lastEvent ast.Expr
				demoted := false // the last event made is elect's Demoted (ev := x.Demoted(...))
				for _, st := range x.List {
					if es, ok := st.(*ast.ExprStmt); ok {
						if call, ok := es.X.(*ast.CallExpr); ok && funcName(call.Fun) == "event" && len(call.Args) > 0 {
							lastEvent, demoted = call.Args[0], false
						}
					}
					if as, ok := st.(*ast.AssignStmt); ok && len(as.Rhs) == 1 {
						if call, ok := as.Rhs[0].(*ast.CallExpr); ok && funcName(call.Fun) == "Demoted" {
							lastEvent, demoted = nil, true
						}
					}
					if as, ok := st.(*ast.AssignStmt); ok && len(as.Lhs) == 1 && funcName(as.Lhs[0]) == "Warn" && isTrue(as.Rhs[0]) {
						if demoted {
							if ws.names["demoted"] == "" {
								ws.names["demoted"] = ws.fset.Position(as.Pos()).String()
							}
						} else if lastEvent == nil {
							ws.names["?no event before .Warn = true at "+ws.fset.Position(as.Pos()).String()] = ""
						} else {
							add(fn, lastEvent, as.Pos())
						}
					}
				}
			case *ast.CallExpr:
				if funcName(x.Fun) == "report" && len(x.Args) >= 3 && isLevelWarn(x.Args[1]) {
					add(fn, x.Args[2], x.Pos())
				}
			}
			return true
		})
	}
}

// scanEventLevels reads the functions a daemon gives its configuration's
// EventLevel (cfg.EventLevel = f, or EventLevel: f), which raise some of
// its cores' INFO events to WARN: every path to a return of
// slog.LevelWarn names its events by the comparisons it passes, e.Name ==
// X (or a guard if e.Name != X { return ... } before it) and the string
// cases it is in (electd's reasons).
func (ws *warnSource) scanEventLevels(pf *parsedFile) {
	ast.Inspect(pf.f, func(n ast.Node) bool {
		var fn ast.Expr
		switch x := n.(type) {
		case *ast.AssignStmt:
			for i, l := range x.Lhs {
				if sel, ok := l.(*ast.SelectorExpr); ok && sel.Sel.Name == "EventLevel" && i < len(x.Rhs) {
					fn = x.Rhs[i]
				}
			}
		case *ast.KeyValueExpr:
			if k, ok := x.Key.(*ast.Ident); ok && k.Name == "EventLevel" {
				fn = x.Value
			}
		}
		if fn == nil {
			return true
		}
		ws.levelFuncs++
		var body *ast.BlockStmt
		at := pf
		switch f := fn.(type) {
		case *ast.FuncLit:
			body = f.Body
		case *ast.Ident, *ast.SelectorExpr:
			for _, k := range ws.callees(pf, f) {
				if d, ok := ws.funcs[k]; ok {
					body, at = d.decl.Body, d.pf
				}
			}
		}
		if body == nil {
			ws.names["?an EventLevel function not read at "+ws.fset.Position(fn.Pos()).String()] = ""
			return true
		}
		ws.warnReturns(at, body)
		return true
	})
}

// warnReturns records the events each return of slog.LevelWarn in body
// is for.
func (ws *warnSource) warnReturns(pf *parsedFile, body *ast.BlockStmt) {
	var stack []ast.Node
	ast.Inspect(body, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		ret, ok := n.(*ast.ReturnStmt)
		if !ok || len(ret.Results) != 1 || !isLevelWarn(ret.Results[0]) {
			return true
		}
		var names []ast.Expr
		for i := 0; i+1 < len(stack); i++ {
			child := stack[i+1]
			switch a := stack[i].(type) {
			case *ast.IfStmt:
				if child == a.Body {
					names = append(names, compared(a.Cond, token.EQL)...)
				} else if child == a.Else {
					names = append(names, compared(a.Cond, token.NEQ)...)
				}
			case *ast.CaseClause:
				names = append(names, a.List...)
			case *ast.BlockStmt:
				for _, st := range a.List {
					if st == child {
						break
					}
					if g, ok := st.(*ast.IfStmt); ok && returns(g.Body) {
						names = append(names, compared(g.Cond, token.NEQ)...)
					}
				}
			}
		}
		if len(names) == 0 {
			ws.names["?a return of slog.LevelWarn that compares no event name at "+ws.fset.Position(ret.Pos()).String()] = ""
		}
		for _, e := range names {
			ws.addName(pf, e, ret.Pos())
		}
		return true
	})
}

// compared returns the X of each x.Name op X (or X op x.Name) in cond.
func compared(cond ast.Expr, op token.Token) []ast.Expr {
	var out []ast.Expr
	ast.Inspect(cond, func(n ast.Node) bool {
		b, ok := n.(*ast.BinaryExpr)
		if !ok || b.Op != op {
			return true
		}
		if funcName(b.X) == "Name" {
			out = append(out, b.Y)
		} else if funcName(b.Y) == "Name" {
			out = append(out, b.X)
		}
		return true
	})
	return out
}

// returns says whether a block ends in a return (a guard).
func returns(b *ast.BlockStmt) bool {
	if len(b.List) == 0 {
		return false
	}
	_, ok := b.List[len(b.List)-1].(*ast.ReturnStmt)
	return ok
}

// notWarnListed are event names docs/operations.md's WARN list names on
// purpose although they are not WARN: the INFO events it gives beside the
// WARN ones they end, and the silence confirmed that member_unconfirmed
// stands for the lack of.
var notWarnListed = map[string]bool{
	"link_up":      true, // "`event=link_up` (INFO) when direct frames come back"
	"member_heard": true, // "`event=member_heard` (INFO) when it is heard again"
	"member_down":  true, // "`event=member_down` names the members that confirmed a silence"
	"timing_fits":  true, // "a member restarted with timings that fit, is `timing_fits` at INFO"
}

// listedNames are the names docs/operations.md's WARN list gives in code
// spans, which may cross a line: a span of one word, and what follows
// the last = of each word of a span (`event=demoted`,
// `reason=lease_expired`, `event=link_down member=3`); the other words of
// a message quoted are not names.
func listedNames(list string) map[string]bool {
	out := map[string]bool{}
	for _, s := range codeSpan.FindAllString(list, -1) {
		words := strings.Fields(strings.Trim(s, "`"))
		if len(words) == 1 {
			out[words[0]] = true
		}
		for _, w := range words {
			if i := strings.LastIndex(w, "="); i >= 0 {
				out[w[i+1:]] = true
			}
		}
	}
	return out
}

// TestWarnEventsListed: every event a daemon logs at WARN is in the list
// an operator reads, docs/operations.md's Logs ("What an operator must
// act on is WARN or ERROR"), in a code span (`name`, `event=name`,
// `reason=name`); the events a daemon's EventLevel raises to WARN are
// among them. And the other way: an event the list names is one the
// source logs at WARN (or one of notWarnListed), and an event=NAME there
// is declared.
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
	listed := listedNames(ops)
	names := slices.Sorted(maps.Keys(ws.names))
	if len(names) < 20 {
		t.Fatalf("only %d WARN events found in the source (%v): the ways events are made changed, and this check no longer sees them", len(names), names)
	}
	if ws.levelFuncs < 2 {
		t.Fatalf("%d EventLevel functions found (electd's and mutexd's were there): the daemons set it another way, and this check no longer sees the events they raise", ws.levelFuncs)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "?") {
			t.Errorf("a WARN event whose name is not a constant: %s", n[1:])
			continue
		}
		if !listed[n] {
			t.Errorf("%s: event %q is logged at WARN but docs/operations.md does not list it (Logs: \"What an operator must act on\")", ws.names[n], n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(listed)) {
		if ws.events[n] && ws.names[n] == "" && !notWarnListed[n] {
			t.Errorf("docs/operations.md's WARN list names the event %s, which no daemon logs at WARN (the source makes it, never at WARN): say what it is, or list it among doccheck's notWarnListed", n)
		}
	}
	for _, m := range regexp.MustCompile(`event=([a-z_]+)`).FindAllStringSubmatch(ops, -1) {
		if !ws.events[m[1]] {
			t.Errorf("docs/operations.md names event=%s, which no daemon's source makes", m[1])
		}
	}
	t.Logf("%d WARN events: %v", len(names), names)
}
