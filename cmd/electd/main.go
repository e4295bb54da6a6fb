// Command electd keeps the machines of a lab agreed on which of them leads:
// an election algorithm picked with --algorithm (bully by default: the
// highest-ranked live member leads), terms that only grow and are
// persisted, and operator hooks run on every change.
//
//	electd run --id 1 --members 1=10.0.0.1:7500,2=10.0.0.2:7500,... [--algorithm bully] [--priorities 2=10]
//	           [--topology 1-2,2-3,...] (yoyo)
//	           [--heartbeat 200ms] [--leader-timeout 400ms] [--answer-timeout 50ms] [--probe 4ms] (bully; the others 50ms / 400ms)
//	           [--on-elected CMD] [--on-demoted CMD] [--on-change CMD]
//	electd leader [--json]     who leads now (exit 1 if nobody does)
//	electd watch [--json]      every leadership change, until interrupted
//	electd resign              the leader steps down
//	electd status [--json] [--cluster]
package main

import (
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/synclab/synclab/pkg/elect"
	electalgorithms "github.com/synclab/synclab/pkg/elect/algorithms"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/elect/majority"
	"github.com/synclab/synclab/pkg/elect/omega"
	"github.com/synclab/synclab/pkg/elect/yoyo"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/wire"
)

const name = "electd"

// algorithms is the election factory table (one line per algorithm, in
// pkg/elect/algorithms).
var algorithms = electalgorithms.All

func algorithmNames() string {
	names := make([]string, len(algorithms))
	for i, a := range algorithms {
		names[i] = a.Name + " (" + a.Summary + ")"
	}
	return strings.Join(names, "; ")
}

func main() {
	// electd's work is serial: one loop steps the core.
	app.SerialRuntime()
	app.Main(newApp())
}

func newApp() *cli.App {
	return app.New(app.Spec{
		Name:  name,
		Usage: "leader election for a lab LAN",
		Description: "electd elects a leader among the members and tells everyone, with the algorithm --algorithm\n" +
			"names (bully by default: the highest-ranked live member leads, ranks are (priority, ID)).\n" +
			"Terms only grow and survive restarts; hooks run on every change.",
		RunFlags:   runFlags(),
		Build:      build,
		Attach:     attach,
		Commands:   []*cli.Command{leaderCommand(), watchCommand(), resignCommand()},
		RenderCore: renderStatus,
		Cluster:    clusterView,
		Examples: []app.Example{
			{Cmd: "electd run --id 2 --members 1=10.0.0.1:7500,2=10.0.0.2:7500,3=10.0.0.3:7500 --key-file /etc/synclab/cluster.key --on-elected /usr/local/sbin/become-primary", Does: "member 2 of three with the bully election; the hook runs when this member becomes leader, with ELECTD_TERM in its environment to fence what it guards."},
			{Cmd: "electd run --id 2 --members 1=10.0.0.1:7500,2=10.0.0.2:7500,3=10.0.0.3:7500 --key-file /etc/synclab/cluster.key --algorithm majority", Does: "the majority election: never two leaders at one instant, partitions included; a minority side has none."},
			{Cmd: "electd leader --json", Does: "who leads, its address, term and since when; exit 1 when no leader is known."},
			{Cmd: "electd watch", Does: "print every leadership change until interrupted."},
			{Cmd: "electd resign", Does: "on the leader: step down; another member takes over at once."},
		},
		Exits: map[string][]app.Exit{
			"leader": {{Code: "1", Meaning: "also: no leader is known (an election is in progress, or this member is cut off or on a minority side: the message says why)"}},
			"resign": {{Code: "1", Meaning: "also: this member is not the leader (the message names the leader to run it on)"}},
		},
	})
}

func runFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "algorithm", EnvVars: app.Env(name, "algorithm"), Value: electalgorithms.Default, Usage: "election algorithm `NAME`: " + algorithmNames()},
		&cli.StringFlag{Name: "priorities", EnvVars: app.Env(name, "priorities"), Usage: "member priorities `ID=P,...` (higher leads first; default 0; ties broken by ID; the majority election's vote weights, 0 counting 1); must be the same on every node"},
		&cli.StringFlag{Name: "topology", EnvVars: app.Env(name, "topology"), Usage: "yoyo only: the connected graph members elect over, as edges `A-B,B-C,...` (members talk to their neighbours only; default: every pair); must be the same on every node"},
		&cli.DurationFlag{Name: "heartbeat", EnvVars: app.Env(name, "heartbeat"), Usage: "leader heartbeat interval, used as given (1ms and up; default: bully and omega 200ms, with --probe 0 50ms; the other algorithms 50ms)"},
		&cli.DurationFlag{Name: "leader-timeout", EnvVars: app.Env(name, "leader-timeout"), Value: plainDefaults.LeaderTimeout, Usage: "silence after which a follower suspects the leader (must exceed --heartbeat, this member's and every other's: a member that beats slower is warned of, timing_mismatch; bully's grows with the leader's lateness while it probes; bully's fast failover: 240ms)"},
		&cli.DurationFlag{Name: "answer-timeout", EnvVars: app.Env(name, "answer-timeout"), Value: defaultAnswerTimeout, Usage: "how long a candidate waits for a member it asked to answer (1ms to 10s: the cluster has no leader while a candidate waits for a member that is down)"},
		&cli.DurationFlag{Name: "probe", EnvVars: app.Env(name, "probe"), Usage: "bully and omega only: bully's follower that missed a heartbeat asks the leader for one this often until --leader-timeout (default 4ms); omega's follower whose window has not heard the leader asks it this often, 5 times, in the window's last 5 x --probe (default 10ms); 0: off, and then their default --heartbeat is 50ms"},
		&cli.StringSliceFlag{Name: "on-elected", EnvVars: app.Env(name, "on-elected"), Usage: "shell `CMD` run when this node becomes leader"},
		&cli.StringSliceFlag{Name: "on-demoted", EnvVars: app.Env(name, "on-demoted"), Usage: "shell `CMD` run when this node stops being leader"},
		&cli.StringSliceFlag{Name: "on-change", EnvVars: app.Env(name, "on-change"), Usage: "shell `CMD` run whenever the leader this node knows changes (or is lost)"},
		&cli.DurationFlag{Name: "hook-timeout", EnvVars: app.Env(name, "hook-timeout"), Value: 10 * time.Second, Usage: "a hook running longer is killed"},
		&cli.DurationFlag{Name: "hint-probe", EnvVars: app.Env(name, "hint-probe"), Value: defaultHintProbe, Usage: "bully only: a follower keeps a TCP link to its leader open; when it closes (the leader's process died), the follower probes the leader this often, 5 times, and gives it up if none is answered (0: off, the timeout alone decides)"},
	}
}

func build(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
	algo, err := elect.Lookup(algorithms, c.String("algorithm"))
	if err != nil {
		return nil, app.Usagef("--algorithm: %v", err)
	}
	if algo.Name == majority.Algorithm.Name {
		// Its leases are durations on the local clock that must not run
		// faster than MaxDriftPPM allows: the oscillator, which timed's
		// slews (up to 8%) and steps of the system clock do not move.
		app.SteadyClock(cfg)
	} else if err := app.ReadOnlySystemClock(cfg); err != nil {
		return nil, err
	}
	prio, err := parsePriorities(c.String("priorities"), cfg.Members)
	if err != nil {
		return nil, err
	}
	// The durations are the operator's, used as given: refused only where
	// no election can run with them (liveness.CheckTimeout).
	opts := elect.Options{Priorities: prio}
	if t := c.String("topology"); t != "" {
		if algo.Name != yoyo.Algorithm.Name {
			return nil, app.Usagef("--topology: only --algorithm %s runs on a topology (%s talks to every member)", yoyo.Algorithm.Name, algo.Name)
		}
		edges, err := yoyo.ParseTopology(t)
		if err != nil {
			return nil, app.Usagef("--topology: %v", err)
		}
		ids := make([]uint32, 0, len(cfg.Members))
		for id := range cfg.Members {
			ids = append(ids, id)
		}
		if err := yoyo.CheckTopology(ids, edges); err != nil {
			return nil, app.Usagef("--topology: %v", err)
		}
		for _, e := range edges {
			opts.Topology = append(opts.Topology, [2]uint32(e))
		}
	}
	if err := durations(c, algo, &opts); err != nil {
		return nil, err
	}
	if err := hintProbe(c, algo, &opts); err != nil {
		return nil, err
	}

	cfg.Agreement = agreement(algo, opts)
	cfg.StepBackEvents = stepBackEvents
	cfg.ClusterFacts = clusterFacts
	cfg.EventLevel = eventLevel
	cfg.Hooks = map[string][]string{
		elect.EventElected:       c.StringSlice("on-elected"),
		elect.EventDemoted:       c.StringSlice("on-demoted"),
		elect.EventLeaderElected: c.StringSlice("on-change"),
		elect.EventLeaderLost:    c.StringSlice("on-change"),
	}
	if cfg.HookTimeout, err = app.HookTimeout(c); err != nil {
		return nil, err
	}
	if algo.Quorum {
		if w := app.MajorityWarning(len(cfg.Members), "the "+algo.Name+" election"); w != "" {
			cfg.Warnings = append(cfg.Warnings, w)
		}
	}
	cfg.HookEnv = func(cc core.Core, e core.Event) []string {
		el, ok := cc.(elect.Elector)
		if !ok {
			return nil
		}
		lead, term, _ := el.Leader()
		if e.Name == elect.EventLeaderLost {
			lead = 0
		}
		return append([]string{
			"ELECTD_ROLE=" + el.Role().String(),
			"ELECTD_LEADER=" + strconv.FormatUint(uint64(lead), 10),
		}, daemon.TermEnv("ELECTD_TERM", term)...)
	}
	stateDir := cfg.StateDir
	return func(env core.Env) (core.Core, error) {
		el, err := algo.New(env, opts)
		if errors.Is(err, core.ErrState) {
			return nil, fmt.Errorf("%w (in %s): remove the file only if you accept that this member's terms restart; "+
				"if every member holds a term no member can reach (an electd before this version took it from a forged frame), stop them all and remove it on each",
				err, filepath.Join(stateDir, daemon.CoreStateFile))
		}
		return el, err
	}, nil
}

// Timing defaults: bully's probed timings (bully.Probed: 200 ms
// heartbeats, a 400 ms timeout, 4 ms probes), omega's (omega.Probed: 200
// ms heartbeats, a 400 ms first window, 10 ms asks), and every other
// algorithm's, which bully and omega take too with --probe 0 (without
// probes the timeout must span several heartbeats, or loss elects).
var (
	probedDefaults = map[string]elect.Options{bully.Algorithm.Name: bully.Probed, omega.Algorithm.Name: omega.Probed}
	plainDefaults  = elect.Options{Heartbeat: 50 * time.Millisecond, LeaderTimeout: 400 * time.Millisecond}
)

// defaultAnswerTimeout is --answer-timeout's default.
const defaultAnswerTimeout = 50 * time.Millisecond

// maxAnswerTimeout is --answer-timeout's longest: 200 times the default.
// No LAN answer takes that long, and the wait is the cluster's: bully's
// candidate waits it for a higher member that is down (and about three
// times it for the coordinator message of one that answered), the rings
// wait it for a hop, the majority election for a vote, each with no
// leader meanwhile (the audit's 1000h was taken silently).
const maxAnswerTimeout = 10 * time.Second

// durations fills opts' durations from the flags, used as given, and the
// ones not set from the algorithm's defaults (probedDefaults for bully
// unless --probe 0, plainDefaults otherwise). --probe is refused for an
// algorithm that does not probe, and a probe that cannot fit between a
// missed heartbeat and the leader timeout is refused with the flags that
// decide it.
func durations(c *cli.Context, algo elect.Algorithm, opts *elect.Options) error {
	def := plainDefaults
	probed, probes := probedDefaults[algo.Name]
	if probes && !(c.IsSet("probe") && c.Duration("probe") == 0) {
		def = probed
	}
	opts.Probe = def.Probe
	for _, f := range []struct {
		flag string
		to   *time.Duration
		def  time.Duration
	}{{"heartbeat", &opts.Heartbeat, def.Heartbeat}, {"leader-timeout", &opts.LeaderTimeout, def.LeaderTimeout}, {"answer-timeout", &opts.AnswerTimeout, defaultAnswerTimeout}} {
		d := f.def
		if c.IsSet(f.flag) {
			d = c.Duration(f.flag)
		}
		if err := liveness.CheckTimeout("--"+f.flag, d); err != nil {
			return app.Usagef("%v", err)
		}
		if f.flag == "answer-timeout" && d > maxAnswerTimeout {
			return app.Usagef("--answer-timeout %v: at most %v: an answer is one round trip (under a millisecond on a LAN, tens of milliseconds on a loaded host), and every election in which an asked member is down waits this long with no leader; the default is %v",
				d, maxAnswerTimeout, defaultAnswerTimeout)
		}
		*f.to = d
	}
	if opts.LeaderTimeout <= opts.Heartbeat {
		return app.Usagef("--leader-timeout (%v) must exceed --heartbeat (%v)", opts.LeaderTimeout, opts.Heartbeat)
	}
	if c.IsSet("probe") {
		if !probes && c.Duration("probe") != 0 {
			return app.Usagef("--probe: only %s and %s probe their leader (%s waits --leader-timeout)", bully.Algorithm.Name, omega.Algorithm.Name, algo.Name)
		}
		opts.Probe = c.Duration("probe")
		if opts.Probe == 0 {
			return nil // off
		}
		if err := liveness.CheckTimeout("--probe", opts.Probe); err != nil {
			return app.Usagef("%v", err)
		}
	}
	if opts.Probe == 0 {
		return nil
	}
	if algo.Name == omega.Algorithm.Name {
		if err := omega.CheckAsk(opts.Heartbeat, opts.LeaderTimeout, opts.Probe); err != nil {
			return app.Usagef("--probe %v with --heartbeat %v and --leader-timeout %v: %d asks of omega's, %v apart, must fit in the first window (--leader-timeout) less a heartbeat (omega's defaults: --heartbeat %v --leader-timeout %v --probe %v; --probe 0 turns asking off, and then --leader-timeout must span several heartbeats: %v / %v)",
				opts.Probe, opts.Heartbeat, opts.LeaderTimeout, omega.Asks, opts.Probe, probed.Heartbeat, probed.LeaderTimeout, probed.Probe, plainDefaults.Heartbeat, plainDefaults.LeaderTimeout)
		}
		return nil
	}
	if opts.Heartbeat+opts.Probe >= opts.LeaderTimeout {
		return app.Usagef("--heartbeat (%v) + --probe (%v) must be below --leader-timeout (%v): a follower probes only between the heartbeat it missed and its leader timeout (bully's defaults: --heartbeat %v --leader-timeout %v --probe %v; --probe 0 turns probing off, and then --leader-timeout must span several heartbeats: %v / %v)",
			opts.Heartbeat, opts.Probe, opts.LeaderTimeout, probed.Heartbeat, probed.LeaderTimeout, probed.Probe, plainDefaults.Heartbeat, plainDefaults.LeaderTimeout)
	}
	return nil
}

// defaultHintProbe is --hint-probe's default: bully.HintProbes (5) probes
// 30 ms apart give a leader whose port closed 150 ms to answer one. A
// SIGKILLed leader is so given up 150 ms after its kernel closed the
// link, whatever the timeout; a live one (a forged reset) would have to
// be stalled for all 150 ms to be given up, longer than the 50-100 ms
// stalls this lab's shared host makes (docs/benchmarks/2026-12-06-elect-hint.md).
const defaultHintProbe = 30 * time.Millisecond

// hintProbe sets opts.HintProbe from --hint-probe, for bully only (the
// other algorithms do not act on hints: refused if set for them). It must
// leave bully.HintProbes probes room before --leader-timeout, or the
// timeout decides first anyway: refused if given, off if it is the
// default (a --leader-timeout under 150 ms fails over fast without it).
func hintProbe(c *cli.Context, algo elect.Algorithm, opts *elect.Options) error {
	d := c.Duration("hint-probe")
	if algo.Name != bully.Algorithm.Name {
		if c.IsSet("hint-probe") && d != 0 {
			return app.Usagef("--hint-probe: only %s acts on a leader's closed port (%s waits --leader-timeout)", bully.Algorithm.Name, algo.Name)
		}
		return nil
	}
	if !c.IsSet("hint-probe") && bully.HintProbes*d >= opts.LeaderTimeout {
		d = 0 // the default leaves a short --leader-timeout no room: off, the timeout is already short
	}
	if d == 0 {
		return nil // off
	}
	if err := bully.CheckHintProbe(d, opts.LeaderTimeout); err != nil {
		return app.Usagef("--hint-probe (with --leader-timeout %v): %v", opts.LeaderTimeout, err)
	}
	opts.HintProbe = d
	return nil
}

// agreement is what must be the same on every electd of a cluster, beside
// the member list and cluster name: the algorithm, the priorities (bully's
// ranks, the majority election's vote weights), Yo-Yo's topology and, for
// the majority election, --leader-timeout, which is its lease: a voter
// with a shorter one would be free before the leader it voted for stops
// believing it leads. The other durations are each host's own timing,
// but the heartbeat and the leader timeout must fit every other member's
// (node.Agreement.Heartbeat: the node tells them, and warns of a member
// whose heartbeats come further apart than this one waits for them).
func agreement(algo elect.Algorithm, opts elect.Options) *node.Agreement {
	params := map[string]string{"priorities": formatPriorities(opts.Priorities)}
	if algo.Name == yoyo.Algorithm.Name {
		var edges []string
		for _, e := range opts.Topology {
			a, b := min(e[0], e[1]), max(e[0], e[1])
			edges = append(edges, fmt.Sprintf("%d-%d", a, b))
		}
		slices.Sort(edges)
		params["topology"] = strings.Join(slices.Compact(edges), ",")
	}
	if algo.Name == majority.Algorithm.Name {
		params["leader-timeout"] = opts.LeaderTimeout.String()
	}
	return &node.Agreement{Algorithm: algo.Name, Params: params, Heartbeat: opts.Heartbeat, LeaderTimeout: opts.LeaderTimeout}
}

// formatPriorities writes priorities in one order, leaving out 0 (the
// default): "2=10,5=3" however the operator spelt them.
func formatPriorities(p map[uint32]uint32) string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(p)) {
		if p[id] != 0 {
			out = append(out, fmt.Sprintf("%d=%d", id, p[id]))
		}
	}
	return strings.Join(out, ",")
}

// eventLevel logs at WARN a leadership lost against the leader's will: a
// lease that ran out (the majority election's leader did not hear its
// majority in time), terms run out, a step back. A demotion by a
// higher-ranked leader or a resignation is the algorithm working: INFO.
func eventLevel(e core.Event) slog.Level {
	if e.Name != elect.EventDemoted {
		return slog.LevelInfo
	}
	for i := 0; i+1 < len(e.Args); i += 2 {
		if e.Args[i] == "reason" {
			switch e.Args[i+1] {
			case "lease_expired", "terms_exhausted", "claim_unsaved", daemon.EventSteppedBack:
				return slog.LevelWarn
			}
		}
	}
	return slog.LevelInfo
}

// stepBackEvents are the events a leadership ends with when the member
// steps back (its core is stopped): demoted if it led, leader_lost if it
// knew a leader. Hooks bound to them run as for any other demotion.
func stepBackEvents(c core.Core) []core.Event {
	el, ok := c.(elect.Elector)
	if !ok {
		return nil
	}
	st := el.Report()
	var out []core.Event
	if st.Role == elect.RoleLeader {
		out = append(out, elect.Change{Event: elect.EventDemoted, Leader: st.ID, Term: st.Term, Reason: daemon.EventSteppedBack}.CoreEvent())
	}
	if st.Leader != 0 {
		out = append(out, elect.Change{Event: elect.EventLeaderLost, Leader: st.Leader, Term: st.Term, Reason: daemon.EventSteppedBack}.CoreEvent())
	}
	return out
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
	// Why says, when no leader is known, where the election is (the
	// algorithm's phase: "no leader: no majority ...").
	Why string `json:"why,omitempty"`
}

// elector is the daemon's core as the election it is.
func elector(n *node.Node) (elect.Elector, error) {
	el, ok := n.Core().(elect.Elector)
	if !ok {
		return nil, fmt.Errorf("the daemon's core (%T) is not an election", n.Core())
	}
	return el, nil
}

func attach(_ *cli.Context, d *daemon.Daemon) error {
	members := d.Config().Members
	d.Handle(http.MethodGet, "/v1/leader", func(r *http.Request) (any, error) {
		var v leaderView
		var err error
		if derr := d.Do(r.Context(), func(n *node.Node) {
			var el elect.Elector
			if el, err = elector(n); err != nil {
				return
			}
			st := el.Report()
			if why, back := daemon.SteppedBack(n); back {
				// Its core was stopped: it neither leads nor follows.
				v = leaderView{Term: st.Term, Round: st.Round, Role: "stepped_back", Why: "this member stepped back: " + why}
				return
			}
			v = leaderView{Leader: st.Leader, Term: st.Term, Round: st.Round, Since: st.LeaderSince,
				Self: st.Leader == st.ID, Role: st.Role.String()}
			if st.Leader != 0 {
				v.Address = members[st.Leader].String()
			} else {
				v.Why = st.Phase
			}
		}); derr != nil {
			return nil, derr
		}
		return v, err
	})
	d.Handle(http.MethodPost, "/v1/resign", func(r *http.Request) (any, error) {
		var err error
		var v leaderView
		if derr := d.DoActive(r.Context(), func(n *node.Node) {
			var el elect.Elector
			if el, err = elector(n); err != nil {
				return
			}
			err = el.Resign(d.Config().Clock.Now())
			st := el.Report()
			v = leaderView{Leader: st.Leader, Term: st.Term, Round: st.Round, Role: st.Role.String()}
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

// clusterFacts is electd's part of its row in `status --cluster`: its
// role, the leader it knows and the term.
func clusterFacts(c core.Core) (string, []wire.StatusFact) {
	el, ok := c.(elect.Elector)
	if !ok {
		return "", nil
	}
	st := el.Report()
	return st.Role.String(), []wire.StatusFact{
		{Tag: wire.FactLeader, Value: uint64(st.Leader)},
		{Tag: wire.FactTerm, Value: st.Term},
		{Tag: wire.FactTermRound, Value: uint64(st.Round)},
	}
}

// clusterView is electd's columns of `status --cluster`.
var clusterView = &app.ClusterView{
	Headers: []string{"Role", "Leader", "Term"},
	Cells: func(r daemon.ClusterRow) []string {
		if r.SteppedBack {
			return []string{"stepped back", "-", rowTerm(r)}
		}
		leader := "none"
		if l := r.Facts["leader"].String(); l != "" && l != "0" {
			leader = l
		}
		return []string{r.Role, leader, rowTerm(r)}
	},
}

// rowTerm shows a row's term as people read it: its round and owner ("3 by 2")
// where terms are owned epochs (round << 32 | owner), else the number.
func rowTerm(r daemon.ClusterRow) string {
	term, err1 := strconv.ParseUint(r.Facts["term"].String(), 10, 64)
	round, err2 := strconv.ParseUint(r.Facts["term_round"].String(), 10, 32)
	switch {
	case err1 != nil:
		return "-"
	case term == 0:
		return "none"
	case err2 == nil && round != term:
		return fmt.Sprintf("%d by %d", round, epoch.Owner(term))
	}
	return strconv.FormatUint(term, 10)
}
