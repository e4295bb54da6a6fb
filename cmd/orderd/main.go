// Command orderd multicasts messages to the machines of a lab with the
// ordering promises of the course notes' chapter on logical time (reliable FIFO,
// causal with vector clocks, total by an elected sequencer or by Lamport
// stamps with acks from all), and keeps a replicated state machine on the
// total order: the notes' bank account and a key-value map.
//
//	orderd run --id 1 --members 1=10.0.0.1:7600,2=10.0.0.2:7600,... [--total sequencer|lamport] [--on-deliver CMD]
//	orderd send [--order fifo|causal|total] MESSAGE
//	orderd log [--follow] [--json]
//	orderd apply 'deposit 100' | 'interest 1%' | 'set k v'
//	orderd state [--json]      orderd get KEY
//	orderd status [--json] [--cluster]
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/order"
	"github.com/synclab/synclab/pkg/order/rsm"
)

const name = "orderd"

func main() {
	app.SerialRuntime()
	a := newApp()
	os.Args = app.FlagsFirst(os.Args, a, "send", "apply")
	app.Main(a)
}

func newApp() *cli.App {
	return app.New(app.Spec{
		Name:  name,
		Usage: "ordered multicast (FIFO, causal, total) and a replicated state machine for a lab LAN",
		Description: "orderd delivers every member's messages to every member, each once, in the order asked for:\n" +
			"fifo (each sender's order), causal (after every message that could have caused it) or total\n" +
			"(one order everywhere: an elected sequencer, or Lamport stamps with acks from all, --total).\n" +
			"The total order drives a replicated account and key-value map (orderd apply, state, get).",
		RunFlags:   runFlags(),
		Build:      build,
		Attach:     attach,
		Commands:   []*cli.Command{sendCommand(), logCommand(), applyCommand(), stateCommand(), getCommand()},
		RenderCore: renderStatus,
		Cluster:    clusterView,
		Examples: []app.Example{
			{Cmd: "orderd run --id 2 --members 1=10.0.0.1:7600,2=10.0.0.2:7600,3=10.0.0.3:7600 --key-file /etc/synclab/cluster.key", Does: "member 2 of three; total order by an elected sequencer (a majority must be up)."},
			{Cmd: "orderd send --order causal 'the results are in'", Does: "multicast a message to every member, delivered after every message that could have caused it."},
			{Cmd: "orderd log --follow", Does: "print the deliveries as they come, in this member's delivery order."},
			{Cmd: "orderd apply 'deposit 100'", Does: "apply a command to the replicated account in total order and print its result here (balance 1100.00)."},
			{Cmd: "orderd get motd", Does: "print a key of the replicated map (exit 1 if it is unset)."},
		},
		Exits: map[string][]app.Exit{
			"send":  {{Code: "1", Meaning: "also: with --wait, the message was delivered but the state machine refused it (an unknown verb in total order), alike at every member; or not answered within --timeout (it may still be delivered); or this member could not write it: \"not sent\" (taken back, never delivered: sending it again is safe) or \"not saved\" (it may still be delivered: look in orderd log first)"}},
			"apply": {{Code: "1", Meaning: "also: the state machine refused the command (withdraw below zero, an unknown verb), alike at every replica"}},
			"get":   {{Code: "1", Meaning: "also: the key is not set"}},
		},
	})
}

func runFlags() []cli.Flag {
	d := order.DefaultLANConfig()
	return []cli.Flag{
		&cli.StringFlag{Name: "total", EnvVars: app.Env(name, "total"), Value: "sequencer", Usage: "how total order is made: sequencer (elected, bully; a majority must be up) or lamport (the notes' distributed algorithm: every member must be up); the same on every node"},
		&cli.DurationFlag{Name: "retry", EnvVars: app.Env(name, "retry"), Value: d.Retry, Usage: "resend what is not acknowledged after this long (doubling up to 16x while a member is silent)"},
		&cli.IntFlag{Name: "window", EnvVars: app.Env(name, "window"), Value: d.Window, Usage: "records of this node's stream that may wait for the slowest member's ack; beyond, send is refused until it catches up"},
		&cli.DurationFlag{Name: "heartbeat", EnvVars: app.Env(name, "heartbeat"), Value: electHeartbeat, Usage: "the sequencer's heartbeat (its election's); a member that lags is sent the commit point every --heartbeat or 50ms, whichever is shorter"},
		&cli.DurationFlag{Name: "commit-delay", EnvVars: app.Env(name, "commit-delay"), Value: d.CommitDelay, Usage: "while numbers are in flight, how long the sequencer waits for an entry's frame to carry a new commit point before it sends it alone (more: fewer frames under load; an idle sequencer sends it at once)"},
		&cli.DurationFlag{Name: "leader-timeout", EnvVars: app.Env(name, "leader-timeout"), Value: electLeaderTimeout, Usage: "silence after which members elect a new sequencer (must exceed --heartbeat + --probe, and every other member's --heartbeat: a member that beats slower is warned of, timing_mismatch)"},
		&cli.DurationFlag{Name: "probe", EnvVars: app.Env(name, "probe"), Value: electProbe, Usage: "a member that missed the sequencer's heartbeat asks it for one this often until --leader-timeout, so that one lost heartbeat is not a failover (0: off; then give --leader-timeout several heartbeats, e.g. --heartbeat 50ms --leader-timeout 400ms --probe 0)"},
		&cli.DurationFlag{Name: "hint-probe", EnvVars: app.Env(name, "hint-probe"), Value: electHintProbe, Usage: "a member keeps a TCP link to the sequencer open; when it closes (the sequencer's process died), the member probes the sequencer this often, 5 times, and elects a new one if none is answered (0: off, --leader-timeout alone decides)"},
		&cli.StringSliceFlag{Name: "on-deliver", EnvVars: app.Env(name, "on-deliver"), Usage: "shell `CMD` run for every delivered message (ORDERD_ORDER, ORDERD_SENDER, ORDERD_SEQ, ORDERD_INDEX, ORDERD_MESSAGE, ORDERD_RESULT in its environment); " +
			"at least once: a total-order delivery is announced before its record is written, and after a crash in between it runs again with the same ORDERD_SEQ (its log number; a new ORDERD_INDEX): deduplicate by ORDERD_SEQ. " +
			"A member more than the log's 256 entries behind catches up from a snapshot of the state: the hook then runs once for the numbers it skipped, with ORDERD_SKIPPED_FROM, ORDERD_SKIPPED_TO (= ORDERD_SEQ) and ORDERD_SNAPSHOT_FROM (the member whose snapshot) set, an empty message and sender 0"},
		&cli.DurationFlag{Name: "hook-timeout", EnvVars: app.Env(name, "hook-timeout"), Value: 10 * time.Second, Usage: "a hook running longer is killed"},
	}
}

// The sequencer's election by default: bully's leader probes (a member
// that missed a heartbeat asks the sequencer for one every 4 ms until its
// timeout), so that heartbeats can be four times sparser than the 50 ms
// they were (an idle sequencer's CPU is its heartbeats' wake-ups: issue
// 34). The timeout stays the 400 ms it was, not fast failover's 240 ms:
// with probes a sequencer is given up after (timeout - heartbeat) without
// a word, 200 ms here, where 240 ms left 40 ms, which a busy host's
// scheduling, a collection or an fdatasync on the loop exceeds (in the
// simulator one pause of 50-80 ms cost two sequencer changes in 3-9 of 40
// trials; 0 of 40 at 400 ms, as with the former 50 ms / 400 ms).
const (
	electHeartbeat     = 200 * time.Millisecond
	electLeaderTimeout = 400 * time.Millisecond
	electProbe         = 4 * time.Millisecond
	// electHintProbe: 5 probes 30 ms apart after the sequencer's link
	// closed (its process died) give it 150 ms to answer one; a dead
	// sequencer is replaced that long after the kill, not 200-400 ms
	// (electd's --hint-probe, docs/benchmarks/2026-12-06-elect-hint.md).
	electHintProbe = 30 * time.Millisecond
)

// config maps the flags to the core's configuration.
func config(c *cli.Context) (order.Config, error) {
	cfg := order.DefaultLANConfig()
	var err error
	if cfg.Total, err = order.ParseTotal(c.String("total")); err != nil {
		return cfg, app.Usagef("--total: %v", err)
	}
	cfg.Retry, cfg.Window = c.Duration("retry"), c.Int("window")
	// The core checks these too, by its own names (Window, RelayAfter);
	// 0 would be its default, not what the operator typed.
	if cfg.Window < 1 || cfg.Window > order.MaxWindow {
		return cfg, app.Usagef("--window %d: want 1 to %d", cfg.Window, order.MaxWindow)
	}
	if cfg.Retry > cfg.RelayAfter/2 {
		return cfg, app.Usagef("--retry %v: at most %v (a member relays another's unacknowledged record after %v: a resend must come first)", cfg.Retry, cfg.RelayAfter/2, cfg.RelayAfter)
	}
	opts := elect.Options{Heartbeat: c.Duration("heartbeat"), LeaderTimeout: c.Duration("leader-timeout"), Probe: c.Duration("probe")}
	for _, f := range []string{"retry", "heartbeat", "leader-timeout"} {
		if err := liveness.CheckTimeout("--"+f, c.Duration(f)); err != nil {
			return cfg, app.Usagef("%v", err)
		}
	}
	if opts.LeaderTimeout <= opts.Heartbeat {
		return cfg, app.Usagef("--leader-timeout (%v) must exceed --heartbeat (%v)", opts.LeaderTimeout, opts.Heartbeat)
	}
	if opts.Probe != 0 {
		if err := liveness.CheckTimeout("--probe", opts.Probe); err != nil {
			return cfg, app.Usagef("%v", err)
		}
		if opts.Heartbeat+opts.Probe >= opts.LeaderTimeout {
			return cfg, app.Usagef("--heartbeat (%v) + --probe (%v) must be below --leader-timeout (%v): a member probes the sequencer only between the heartbeat it missed and its leader timeout (--probe 0 turns probing off; then give --leader-timeout several heartbeats)",
				opts.Heartbeat, opts.Probe, opts.LeaderTimeout)
		}
	}
	opts.HintProbe = c.Duration("hint-probe")
	if !c.IsSet("hint-probe") && bully.HintProbes*opts.HintProbe >= opts.LeaderTimeout {
		opts.HintProbe = 0 // the default leaves a short --leader-timeout no room: off, the timeout is already short
	}
	if opts.HintProbe != 0 {
		if err := bully.CheckHintProbe(opts.HintProbe, opts.LeaderTimeout); err != nil {
			return cfg, app.Usagef("--hint-probe (with --leader-timeout %v): %v", opts.LeaderTimeout, err)
		}
	}
	// The order's own repeats (the commit point to a member that lags, a
	// member's question for it, a resent entry) keep their pace when the
	// election's heartbeat is sparse: they cost nothing while idle, and a
	// lost frame's recovery waits for them.
	cfg.Heartbeat = min(opts.Heartbeat, cfg.Heartbeat)
	if cfg.CommitDelay = c.Duration("commit-delay"); cfg.CommitDelay <= 0 || cfg.CommitDelay > cfg.Heartbeat {
		return cfg, app.Usagef("--commit-delay %v: want more than 0 and at most --heartbeat or %v, whichever is shorter (%v here)", cfg.CommitDelay, order.DefaultLANConfig().Heartbeat, cfg.Heartbeat)
	}
	cfg.Election = func(env core.Env) (elect.Elector, error) {
		return bully.New(env, order.SequencerElection(bully.FromOptions(env.Members, opts)))
	}
	cfg.Machine = func() order.StateMachine { return rsm.New() }
	return cfg, nil
}

func build(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
	if err := app.ReadOnlySystemClock(cfg); err != nil {
		return nil, err
	}
	ocfg, err := config(c)
	if err != nil {
		return nil, err
	}
	// Without a key anyone can forge a member's acknowledgement: the
	// stream keeps a record until the acknowledgement settles.
	ocfg.Unkeyed = len(cfg.Keys) == 0
	if ocfg.Unkeyed && ocfg.Window > order.MaxUnkeyedWindow {
		return nil, app.Usagef("--window %d: without a key at most %d (records wait for their acknowledgements to settle, as many as %d with a key): give the cluster a key (--key-file), or a smaller --window", ocfg.Window, order.MaxUnkeyedWindow, order.MaxWindow)
	}
	members := slices.Sorted(maps.Keys(cfg.Members))
	// A trial core with no state: settings it cannot work with are a usage
	// error before anything starts.
	if _, err := order.New(core.Env{ID: cfg.ID, Members: members, Now: time.Now(), Rand: rand.New(rand.NewPCG(1, 1)), Lamport: new(clock.Lamport)}, ocfg); err != nil {
		return nil, app.UsageError{Err: err}
	}
	// What must be the same on every orderd beside the member list and
	// cluster name: how total order is made. The durations and the window
	// are each host's own, but the sequencer's heartbeat and the leader
	// timeout must fit every other member's: the node tells them, and
	// warns of a member whose heartbeats come further apart than this one
	// waits for them (a sequencer given up between two of its heartbeats,
	// over and over).
	cfg.Agreement = &node.Agreement{Algorithm: ocfg.Total.String(), Heartbeat: c.Duration("heartbeat"), LeaderTimeout: c.Duration("leader-timeout")}
	cfg.ClusterFacts = clusterFacts
	cfg.Hooks = map[string][]string{order.EventDelivered: c.StringSlice("on-deliver")}
	if cfg.HookTimeout, err = app.HookTimeout(c); err != nil {
		return nil, err
	}
	if ocfg.Total == order.Sequencer {
		if w := app.MajorityWarning(len(cfg.Members), "the sequencer's total order"); w != "" {
			cfg.Warnings = append(cfg.Warnings, w)
		}
	}
	cfg.HookEnv = hookEnv
	// The core last built: a step back's rebuild starts its submissions in
	// an era after that core's, whatever its disk holds (order.EraAfter).
	var last *order.Core
	return func(env core.Env) (core.Core, error) {
		oc, err := order.New(env, ocfg)
		if err == nil && last != nil {
			err = oc.EraAfter(last.Era())
		}
		if err == nil {
			last = oc
		}
		if errors.Is(err, core.ErrState) {
			return nil, fmt.Errorf("%w (in %s/%s and %s): they hold this member's stream, log and replicated state; "+
				"removing them makes the member start empty, and the others' messages to it and its place in the log are lost: "+
				"remove them only with every orderd of the cluster stopped, on every member", err, cfg.StateDir, daemon.CoreStateFile, daemon.CoreLogFile)
		}
		return oc, err
	}, nil
}

// hookEnv describes a delivery to the --on-deliver hooks.
func hookEnv(cc core.Core, e core.Event) []string {
	oc, ok := cc.(*order.Core)
	if !ok || e.Name != order.EventDelivered {
		return nil
	}
	var index uint64
	for i := 0; i+1 < len(e.Args); i += 2 {
		if k, _ := e.Args[i].(string); k == "index" {
			index, _ = e.Args[i+1].(uint64)
		}
	}
	h := oc.History(index - 1)
	if len(h) == 0 || h[0].Index != index {
		return nil
	}
	d := h[0]
	msg := d.Message
	if viewOf(d).Plain {
		msg, _ = rsm.Text(msg) // as sent
	}
	env := []string{
		"ORDERD_ORDER=" + d.Order.String(),
		"ORDERD_SENDER=" + strconv.FormatUint(uint64(d.Sender), 10),
		"ORDERD_SEQ=" + strconv.FormatUint(d.Seq, 10),
		"ORDERD_INDEX=" + strconv.FormatUint(d.Index, 10),
		"ORDERD_MESSAGE=" + string(msg),
		"ORDERD_RESULT=" + d.Result + d.Error,
	}
	if k := d.Skipped; k != nil {
		// Numbers this member will not deliver one by one: it caught up
		// from a snapshot (ORDERD_SEQ is the last of them, the message
		// empty, the sender 0).
		env = append(env,
			"ORDERD_SKIPPED_FROM="+strconv.FormatUint(k.From, 10),
			"ORDERD_SKIPPED_TO="+strconv.FormatUint(k.To, 10),
			"ORDERD_SNAPSHOT_FROM="+strconv.FormatUint(uint64(k.Via), 10))
	}
	return env
}

func renderStatus(w io.Writer, raw []byte, now time.Time) error {
	var st order.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("unexpected order status: %w", err)
	}
	fmt.Fprintf(w, "Members  : %v (this node %d)\nTotal    : %s\n", st.Members, st.ID, st.Total)
	if s := st.Sequencer; s != nil {
		seq := "none known (an election is running)"
		if s.Phase != "" {
			seq = "none known (election: " + s.Phase + ")"
		}
		if s.Sequencer != 0 {
			seq = strconv.FormatUint(uint64(s.Sequencer), 10)
			if s.Sequencer == st.ID {
				seq += " (this node)"
			}
		}
		fmt.Fprintf(w, "Sequencer: %s; this node is %s, term %s\n", seq, s.Role, epoch.Format(s.Term))
		if s.Unsaved != 0 {
			fmt.Fprintf(w, "           %s TERM %s WAITS FOR ITS STATE WRITE (it failed: every frame of this node waits for one that succeeds, and the others may follow another sequencer meanwhile; see Persist)\n",
				strings.ToUpper(s.Role), epoch.Format(s.Unsaved))
		}
		fmt.Fprintf(w, "Log      : last %d, committed %d, applied %d, compacted up to %d, %d of this node's messages wait for a number\n",
			s.Last, s.Commit, s.Applied, s.Base, s.Submits)
		if k := s.LastSkip; k != nil {
			fmt.Fprintf(w, "Skipped  : numbers %d to %d, not delivered here one by one: caught up from member %d's snapshot (more than the log's entries behind; %d numbers skipped since start, see orderd log)\n",
				k.From, k.To, k.Via, st.Counters["skipped_numbers"])
		}
	}
	if st.Machine != "" {
		fmt.Fprintf(w, "State    : %s\n", st.Machine)
	}
	var ds []string
	for _, k := range slices.Sorted(maps.Keys(st.Delivered)) {
		if k != "total_index" {
			ds = append(ds, fmt.Sprintf("%d %s", st.Delivered[k], k))
		}
	}
	if len(ds) == 0 {
		ds = []string{"nothing"}
	}
	fmt.Fprintf(w, "Delivered: %s since start (%d in all)\nVector   : %v (causal messages delivered per member)\n", strings.Join(ds, ", "), st.Delivered["total_index"], st.CausalVector)
	var cs []string
	for _, k := range slices.Sorted(maps.Keys(st.Counters)) {
		cs = append(cs, fmt.Sprintf("%s %d", k, st.Counters[k]))
	}
	if len(cs) > 0 {
		fmt.Fprintf(w, "Counters : %s\n", strings.Join(cs, ", "))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// Settled: how far our stream is trimmed for the member (Acked with
	// a key; without one, what stood 8 x --retry with no lower word).
	fmt.Fprintln(tw, "Member\tAcked our stream\tSettled\tUnacked\tTheirs received\tHeld back")
	for _, s := range st.Streams {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\n", s.Member, s.Acked, s.Settled, s.Unacked, s.Received, s.HeldBack)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.Pending) == 0 {
		fmt.Fprintln(w, "\nNothing pending.")
		return nil
	}
	fmt.Fprintln(w, "\nPending (received, not delivered):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Order\tFrom\tSeq\tWaiting for")
	for _, p := range st.Pending {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", p.Order, p.Sender, p.Seq, p.Waiting)
	}
	return tw.Flush()
}
