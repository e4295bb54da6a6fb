package scenario

import (
	"slices"
	"strings"
	"testing"
)

func TestCommandsAndDiff(t *testing.T) {
	lines, cmds := Commands("# a comment\n> ring 3\nold output\n\n> run 1s\n")
	if !slices.Equal(lines, []string{"# a comment", "> ring 3", "> run 1s"}) || cmds[0] != nil ||
		!slices.Equal(cmds[1], []string{"ring", "3"}) || !slices.Equal(cmds[2], []string{"run", "1s"}) {
		t.Fatalf("lines %q, cmds %q", lines, cmds)
	}
	if d := Diff("a\nb\nc", "a\nx\nc"); !strings.Contains(d, "line 2") || !strings.Contains(d, `"x"`) {
		t.Fatalf("diff %q", d)
	}
}
