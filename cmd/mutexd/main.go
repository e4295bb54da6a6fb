// Command mutexd gives the machines of a lab named locks that no two of them
// hold at once.
//
//	mutexd run --id 1 --members 1=10.0.0.1:7400,2=10.0.0.2:7400,...
//	mutexd status [--json]
package main

import (
	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
)

const name = "mutexd"

func main() {
	app.Main(app.New(app.Spec{
		Name:       name,
		Usage:      "distributed mutual exclusion for a lab LAN",
		Build:      build,
		RenderCore: app.RenderLiveness,
	}))
}

func build(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
	if err := app.ReadOnlySystemClock(cfg); err != nil {
		return nil, err
	}
	return app.LivenessCore(cfg), nil
}
