package doccheck

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

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
