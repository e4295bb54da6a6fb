package algdocs

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	electalgorithms "github.com/synclab/synclab/pkg/elect/algorithms"
	mutexalgorithms "github.com/synclab/synclab/pkg/mutex/algorithms"
)

var update = flag.Bool("docs.update", false, "rewrite the generated tables of docs/ from the registries")

// TestGeneratedDocs: the docs' algorithm and kind tables are what the
// registries say now (rewrite them with -docs.update).
func TestGeneratedDocs(t *testing.T) {
	for _, s := range Sections(mutexalgorithms.All, electalgorithms.All) {
		path := filepath.Join("..", "..", "..", s.Path)
		have, err := os.ReadFile(path)
		if err != nil && !(os.IsNotExist(err) && s.Name == "" && *update) {
			t.Fatal(err)
		}
		want := s.Text
		if s.Name != "" {
			if want, err = Replace(string(have), s.Name, s.Text); err != nil {
				t.Fatalf("%s: %v", s.Path, err)
			}
		}
		if string(have) == want {
			continue
		}
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		what := "section " + s.Name
		if s.Name == "" {
			what = "page"
		}
		t.Errorf("%s: the generated %s is not what the registries say now: regenerate it with\n"+
			"    go test ./internal/testkit/algdocs -docs.update\nand commit it", s.Path, what)
	}
}

// TestReplace: a section is replaced between its markers, everything else
// kept; a page without the markers is an error naming them.
func TestReplace(t *testing.T) {
	page := "a\n" + Begin("x") + "old\n" + End("x") + "b\n"
	got, err := Replace(page, "x", "new\n")
	if want := "a\n" + Begin("x") + "new\n" + End("x") + "b\n"; err != nil || got != want {
		t.Errorf("Replace: %q, %v; want %q", got, err, want)
	}
	if _, err := Replace("a\n", "x", "new\n"); err == nil {
		t.Error("a page without markers: no error")
	}
}
