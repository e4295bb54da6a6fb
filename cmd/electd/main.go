// Command electd keeps the machines of a lab agreed on which of them leads,
// with the bully algorithm: the highest-ranked live member leads, terms only
// grow and are persisted, and operator hooks run on every change.
//
//	electd run --id 1 --members 1=10.0.0.1:7500,2=10.0.0.2:7500,... [--priorities 2=10]
//	           [--on-elected CMD] [--on-demoted CMD] [--on-change CMD]
//	electd leader [--json]     who leads now (exit 1 if nobody does)
//	electd watch [--json]      every leadership change, until interrupted
//	electd resign              the leader steps down
//	electd status [--json]
package main

import (
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
)

const name = "electd"

func main() {
	app.Main(app.New(app.Spec{
		Name:  name,
		Usage: "leader election for a lab LAN (bully algorithm)",
		Description: "electd elects the highest-ranked live member as leader and tells everyone. Ranks are\n" +
			"(priority, ID). Terms only grow and survive restarts; hooks run on every change.",
		RunFlags: []cli.Flag{
			&cli.StringFlag{Name: "priorities", EnvVars: app.Env(name, "priorities"), Usage: "member priorities `ID=P,...` (higher leads first; default 0; ties broken by ID); must be the same on every node"},
			&cli.DurationFlag{Name: "heartbeat", EnvVars: app.Env(name, "heartbeat"), Value: 50 * time.Millisecond, Usage: "leader heartbeat interval"},
			&cli.DurationFlag{Name: "leader-timeout", EnvVars: app.Env(name, "leader-timeout"), Value: 400 * time.Millisecond, Usage: "silence after which a follower suspects the leader (must exceed --heartbeat)"},
			&cli.DurationFlag{Name: "answer-timeout", EnvVars: app.Env(name, "answer-timeout"), Value: 50 * time.Millisecond, Usage: "how long a candidate waits for a higher-ranked member to answer"},
			&cli.StringSliceFlag{Name: "on-elected", EnvVars: app.Env(name, "on-elected"), Usage: "shell `CMD` run when this node becomes leader"},
			&cli.StringSliceFlag{Name: "on-demoted", EnvVars: app.Env(name, "on-demoted"), Usage: "shell `CMD` run when this node stops being leader"},
			&cli.StringSliceFlag{Name: "on-change", EnvVars: app.Env(name, "on-change"), Usage: "shell `CMD` run whenever the leader this node knows changes (or is lost)"},
			&cli.DurationFlag{Name: "hook-timeout", EnvVars: app.Env(name, "hook-timeout"), Value: 10 * time.Second, Usage: "a hook running longer is killed"},
		},
		Build:      build,
		Attach:     attach,
		Commands:   []*cli.Command{leaderCommand(), watchCommand(), resignCommand()},
		RenderCore: renderStatus,
	}))
}

func build(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
	if err := app.ReadOnlySystemClock(cfg); err != nil {
		return nil, err
	}
	prio, err := parsePriorities(c.String("priorities"), cfg.Members)
	if err != nil {
		return nil, err
	}
	ticks := func(flag string) (int, error) {
		d := c.Duration(flag)
		n := int(d / cfg.TickInterval)
		if d <= 0 || d%cfg.TickInterval != 0 && n == 0 {
			return 0, app.Usagef("--%s %v: must be a positive multiple of --tick (%v)", flag, d, cfg.TickInterval)
		}
		return n, nil
	}
	bc := bully.DefaultLANConfig()
	bc.ID = cfg.ID
	for _, id := range slices.Sorted(maps.Keys(cfg.Members)) {
		bc.Members = append(bc.Members, bully.Member{ID: id, Priority: prio[id]})
	}
	if bc.HeartbeatTicks, err = ticks("heartbeat"); err != nil {
		return nil, err
	}
	if bc.LeaderTimeoutTicks, err = ticks("leader-timeout"); err != nil {
		return nil, err
	}
	if bc.AnswerTimeoutTicks, err = ticks("answer-timeout"); err != nil {
		return nil, err
	}
	if bc.LeaderTimeoutTicks <= bc.HeartbeatTicks {
		return nil, app.Usagef("--leader-timeout (%v) must exceed --heartbeat (%v)", c.Duration("leader-timeout"), c.Duration("heartbeat"))
	}
	// The other timeouts keep their proportions to the heartbeat.
	bc.CoordinatorTimeoutTicks = max(bc.AnswerTimeoutTicks, bc.HeartbeatTicks)*2 + bc.AnswerTimeoutTicks
	bc.StaggerTicks = max(1, bc.AnswerTimeoutTicks/2)

	cfg.Hooks = map[string][]string{
		bully.EventElected:       c.StringSlice("on-elected"),
		bully.EventDemoted:       c.StringSlice("on-demoted"),
		bully.EventLeaderElected: c.StringSlice("on-change"),
		bully.EventLeaderLost:    c.StringSlice("on-change"),
	}
	cfg.HookTimeout = c.Duration("hook-timeout")
	cfg.HookEnv = func(cc core.Core, e core.Event) []string {
		b := cc.(*bully.Core)
		lead, term := b.Leader()
		if e.Name == bully.EventLeaderLost {
			lead = 0
		}
		return []string{
			"ELECTD_ROLE=" + b.Role().String(),
			"ELECTD_LEADER=" + strconv.FormatUint(uint64(lead), 10),
			"ELECTD_TERM=" + strconv.FormatUint(term, 10),
		}
	}
	stateDir := cfg.StateDir
	return func(env core.Env) (core.Core, error) {
		persisted, rnd := env.State, env.Rand
		cfg := bc
		if persisted != nil {
			file := filepath.Join(stateDir, daemon.CoreStateFile)
			term, err := bully.Restore(persisted)
			if err != nil {
				return nil, fmt.Errorf("%w in %s: remove the file only if you accept that this member's terms restart", err, file)
			}
			if err := bully.CheckTerm(term); err != nil {
				return nil, fmt.Errorf("%w: the term in %s is one no member can reach or claim above (%v); an electd before this version took it from a forged frame. "+
					"Stop every member and remove the file on each one holding such a term: terms then restart", core.ErrState, file, err)
			}
			cfg.PersistedTerm = term
		}
		cfg.Rand = rnd
		return bully.New(cfg)
	}, nil
}

func parsePriorities(s string, members map[uint32]netip.AddrPort) (map[uint32]uint32, error) {
	prio := map[uint32]uint32{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		idStr, pStr, ok := strings.Cut(f, "=")
		id, err1 := strconv.ParseUint(idStr, 10, 32)
		p, err2 := strconv.ParseUint(pStr, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return nil, app.Usagef("--priorities %q: want ID=PRIORITY,... with integers", f)
		}
		if _, member := members[uint32(id)]; !member {
			return nil, app.Usagef("--priorities: %d is not in --members", id)
		}
		if _, dup := prio[uint32(id)]; dup {
			return nil, app.Usagef("--priorities: member %d listed twice", id)
		}
		prio[uint32(id)] = uint32(p)
	}
	return prio, nil
}

// leaderView is GET /v1/leader and `electd leader --json`.
type leaderView struct {
	Leader  uint32    `json:"leader"`
	Address string    `json:"address,omitempty"`
	Term    uint64    `json:"term"`
	Round   uint32    `json:"term_round"`
	Since   time.Time `json:"since,omitzero"`
	Self    bool      `json:"self"`
	Role    string    `json:"role"`
}

func attach(_ *cli.Context, d *daemon.Daemon) error {
	members := d.Config().Members
	d.Handle(http.MethodGet, "/v1/leader", func(r *http.Request) (any, error) {
		var v leaderView
		err := d.Do(r.Context(), func(n *node.Node) {
			b := n.Core().(*bully.Core)
			st := b.View()
			v = leaderView{Leader: st.Leader, Term: st.Term, Round: st.Round, Since: st.LeaderSince,
				Self: st.Leader == st.ID, Role: st.Role.String()}
			if st.Leader != 0 {
				v.Address = members[st.Leader].String()
			}
		})
		return v, err
	})
	d.Handle(http.MethodPost, "/v1/resign", func(r *http.Request) (any, error) {
		var err error
		var v leaderView
		if derr := d.Do(r.Context(), func(n *node.Node) {
			b := n.Core().(*bully.Core)
			err = b.Resign()
			lead, term := b.Leader()
			v = leaderView{Leader: lead, Term: term, Round: bully.TermRound(term), Role: b.Role().String()}
		}); derr != nil {
			return nil, derr
		}
		if err != nil {
			return nil, conflict(err, v)
		}
		return v, nil
	})
	return nil
}
