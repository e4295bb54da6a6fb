package app

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// Commit is the source revision the binary was built from, set at link
// time with -ldflags "-X github.com/synclab/synclab/internal/app.Commit=..."
// (scripts/install.sh passes `git describe --always --dirty`). Without it,
// the revision Go recorded in the binary (go build -buildvcs=true in a
// checkout) is used; BuildInfo says "unknown" when there is neither.
var Commit = ""

// BuildInfo is what `X version`, `X status` and the synclab_build_info
// metric say about the binary.
type BuildInfo struct {
	Daemon    string `json:"daemon"`
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// Build returns the build information of this binary, named name.
func Build(name string) BuildInfo {
	return BuildInfo{Daemon: name, Version: Version, Commit: commit(), GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

// String is the one line `X version` prints.
func (b BuildInfo) String() string {
	return fmt.Sprintf("%s %s (commit %s, %s, %s)", b.Daemon, b.Version, b.Commit, b.GoVersion, b.Platform)
}

func commit() string {
	if Commit != "" {
		return Commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

func versionCommand(name string) *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version and commit of this binary",
		Flags: []cli.Flag{JSONFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return Usagef("version takes no arguments")
			}
			b := Build(name)
			if c.Bool("json") {
				out, _ := json.Marshal(b)
				fmt.Fprintln(c.App.Writer, string(out))
				return nil
			}
			fmt.Fprintln(c.App.Writer, b)
			return nil
		},
	}
}
