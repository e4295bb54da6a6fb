// Command timed keeps a lab machine's clock in agreement with its peers.
//
//	timed run --id 1 --members 1=10.0.0.1:7300,2=10.0.0.2:7300 [--clock system|sim]
//	timed status [--json]
//
// With --clock sim the daemon runs on a simulated clock (real time plus
// --sim-offset, drifting at --sim-drift ppm) that it corrects like the real
// one, and `timed status --json` reports its exact error as true_offset_ns:
// how tests and the demo measure ground truth without touching the system
// clock.
package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/clock"
)

const name = "timed"

func main() {
	app.Main(app.New(app.Spec{
		Name:  name,
		Usage: "physical clock synchronisation for a lab LAN",
		Description: "timed keeps the clocks of a lab's machines in agreement. It corrects the clock by\n" +
			"slewing, never stepping it backwards.",
		RunFlags: []cli.Flag{
			&cli.StringFlag{Name: "clock", EnvVars: app.Env(name, "clock"), Value: "system", Usage: "`system` (adjtimex; needs CAP_SYS_TIME to correct) or sim (simulated, for tests and demos)"},
			&cli.DurationFlag{Name: "sim-offset", EnvVars: app.Env(name, "sim-offset"), Usage: "with --clock sim: initial error of the simulated clock"},
			&cli.Float64Flag{Name: "sim-drift", EnvVars: app.Env(name, "sim-drift"), Usage: "with --clock sim: frequency error in `PPM`"},
			&cli.Float64Flag{Name: "sim-wander", EnvVars: app.Env(name, "sim-wander"), Usage: "with --clock sim: random-walk frequency noise, `PPM` per sqrt(second)"},
			&cli.BoolFlag{Name: "no-adjust", EnvVars: app.Env(name, "no-adjust"), Usage: "measure and report only; never correct the clock"},
		},
		Build:      build,
		RenderCore: app.RenderLiveness,
	}))
}

func build(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
	kind := c.String("clock")
	if kind != "sim" && (c.IsSet("sim-offset") || c.IsSet("sim-drift") || c.IsSet("sim-wander")) {
		return nil, app.Usagef("--sim-offset, --sim-drift and --sim-wander need --clock sim")
	}
	switch kind {
	case "sim":
		clk := clock.NewSim(clock.SimConfig{
			Offset:            c.Duration("sim-offset"),
			DriftPPM:          c.Float64("sim-drift"),
			WanderPPM:         c.Float64("sim-wander"),
			Seed:              int64(cfg.Seed),
			AllowBackwardStep: false,
		}, time.Now)
		cfg.Clock, cfg.ClockName = clk, "sim"
	case "system":
		clk, err := clock.NewSystem(clock.SystemOptions{ReadOnly: c.Bool("no-adjust")})
		if err != nil {
			return nil, fmt.Errorf("system clock: %w", err)
		}
		cfg.Clock, cfg.ClockName = clk, "system"
	default:
		return nil, app.Usagef("--clock %q: want system or sim", kind)
	}
	return app.LivenessCore(cfg), nil
}
