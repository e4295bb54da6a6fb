package tokenring

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// The ring's own settings (mutexd run flags).
const (
	ParamLossTimeout   = "loss-timeout"
	ParamConfirmWindow = "confirm-window"
)

// Factory builds token ring cores for a driver (cmd/mutexd's registry).
var Factory = mutex.Factory{
	Name:       Name,
	Summary:    "a token ring per lock, with generations, majority checks, fences and leases",
	Guarantees: guarantees,
	// The notes' comparison table: 1 to unbounded messages per entry (the
	// token circulates while nobody wants it), a delay of 0 to N-1.
	Cost: core.Cost{Text: "1 to inf", Delay: "0 to N-1",
		Messages: func(n int) (float64, float64) { return 1, -1 }},
	Kinds: []wire.Kind{wire.KindHeartbeat, wire.KindToken, wire.KindTokenAck, wire.KindRingProbe, wire.KindRingProbeReply},
	Params: []mutex.Param{
		{Name: ParamLossTimeout, Default: DefaultLANConfig().LossTimeout,
			Usage: "how long a waiting member goes without the token before it looks for it (and regenerates it if nobody has it)"},
		{Name: ParamConfirmWindow, Default: DefaultLANConfig().ConfirmWindow,
			Usage: "how recent a majority check of the token must be to grant or renew (at most half of --lease counts); a lease granted on an older check ends --lease after it, shorter by its age; longer saves checks"},
	},
	New:         func(env core.Env, opt mutex.Options) (mutex.Algorithm, error) { return NewFromEnv(env, opt) },
	Renewal:     renewal,
	StatusLines: statusLines,
	LockColumns: []string{"Token", "Generation", "Wants"},
	LockCells:   lockCells,
	FenceText:   fenceText,
}

// fenceText shows a fence as round:grant (fence = round<<40 | grants).
func fenceText(f uint64) string {
	return fmt.Sprintf("%d (%d:%d)", f, f>>fenceCountBits, f&(1<<fenceCountBits-1))
}

// ConfigFor maps a driver's options to the ring's configuration: the
// cluster's lease, the heartbeat (a member silent for 3.5 of them is
// skipped), the ring's own params, the timeouts derived from them in the
// core's proportions, and vouching unless frames are authenticated. The
// result is validated by New.
func ConfigFor(env core.Env, opt mutex.Options) (Config, error) {
	cfg := DefaultLANConfig()
	cfg.ID, cfg.Members = env.ID, env.Members
	cfg.Persisted, cfg.Rand = env.State, env.Rand
	// With a key, the MAC already keeps outsiders from forging a token;
	// without one, a received token is vouched for by its sender first.
	cfg.TrustSenders = opt.Authenticated
	opt.Leases(&cfg.MaxLease, &cfg.MinLease)
	if opt.Heartbeat != 0 {
		cfg.HeartbeatInterval = opt.Heartbeat
	}
	cfg.LossTimeout = opt.Param(ParamLossTimeout, cfg.LossTimeout)
	cfg.ConfirmWindow = opt.Param(ParamConfirmWindow, cfg.ConfirmWindow)
	for _, f := range []struct {
		flag string
		v    time.Duration
	}{{"lease", cfg.MaxLease}, {"heartbeat", cfg.HeartbeatInterval}, {ParamLossTimeout, cfg.LossTimeout}, {ParamConfirmWindow, cfg.ConfirmWindow}} {
		if f.v <= 0 {
			return cfg, fmt.Errorf("%w: --%s %v: must be positive", ErrConfig, f.flag, f.v)
		}
	}
	if cfg.MaxLease < cfg.MinLease {
		return cfg, fmt.Errorf("%w: --lease %v: must be at least %v (a shorter lease could not be renewed in time)", ErrConfig, cfg.MaxLease, cfg.MinLease)
	}
	if cfg.MaxLease > time.Hour {
		return cfg, fmt.Errorf("%w: --lease %v: at most 1h (a lost token waits one lease before it is replaced)", ErrConfig, cfg.MaxLease)
	}
	cfg.DeadAfter = cfg.HeartbeatInterval * 7 / 2
	cfg.ProbeTimeout = min(cfg.ProbeTimeout, cfg.ConfirmWindow/2, cfg.LossTimeout/2)
	if cfg.ProbeTimeout < time.Millisecond {
		return cfg, fmt.Errorf("%w: --%s %v and --%s %v: each must be at least 2ms (a check needs a round trip)",
			ErrConfig, ParamConfirmWindow, cfg.ConfirmWindow, ParamLossTimeout, cfg.LossTimeout)
	}
	return cfg, nil
}

// renewal: the holder renews on its last check while that is within the
// confirm window (at most half a lease: confirmFor), and such a renewal
// ends where the check's lease did; past it, a new check, a round trip,
// and a whole lease from its sending. A grant is made on that check too
// while it is within the window (the next client of the member that holds
// the token, when the last releases): a lease shorter by the check's age.
func renewal(opt mutex.Options) mutex.Renewal {
	cfg := DefaultLANConfig()
	opt.Leases(&cfg.MaxLease, &cfg.MinLease)
	cfg.ConfirmWindow = opt.Param(ParamConfirmWindow, cfg.ConfirmWindow)
	return mutex.Renewal{Reuse: cfg.confirmFor(), Flags: []string{fmt.Sprintf("--%s %v", ParamConfirmWindow, cfg.ConfirmWindow)}, Knob: ParamConfirmWindow}
}

// NewFromEnv builds a member's core from a driver's environment and
// options (Factory.New).
func NewFromEnv(env core.Env, opt mutex.Options) (*Core, error) {
	cfg, err := ConfigFor(env, opt)
	if err != nil {
		return nil, err
	}
	return New(cfg)
}

// statusLines are the ring's lines of `mutexd status`.
func statusLines(st mutex.Status, raw json.RawMessage) ([]string, error) {
	var d Detail
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("unexpected ring detail: %w", err)
	}
	alive := 0
	for _, m := range st.Members {
		if m.Alive {
			alive++
		}
	}
	c := st.Counters
	return []string{
		fmt.Sprintf("Ring     : member %d, majority %d, %d of %d alive", st.ID, d.Majority, alive, len(st.Members)),
		fmt.Sprintf("Tokens   : %d passed, %d received, %d skips, %d regenerations, %d stale refused",
			c["tokens_passed"], c["tokens_received"], c["acks_missed"], c["regenerations"], c["tokens_refused_stale"]+c["tokens_refused_by_successor"]),
	}, nil
}

// lockCells are the ring's columns of a lock in `mutexd status`: where the
// token is, its generation as round/creator, and the members known to want
// it.
func lockCells(raw json.RawMessage) ([]string, error) {
	var d LockDetail
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("unexpected ring lock detail: %w", err)
		}
	}
	token := "elsewhere"
	switch {
	case d.Token == "here" && d.HoldLeftMS > 0:
		token = fmt.Sprintf("here (hold %s)", time.Duration(d.HoldLeftMS)*time.Millisecond)
	case d.Token == "here":
		token = "here"
	case d.Token == "in_flight":
		token = fmt.Sprintf("to %d", d.InFlightTo)
	case d.Looking != "":
		token = "lost? (" + d.Looking + ")"
	}
	gen, g := "-", d.Generation
	if g == 0 {
		g = d.Promised
	}
	if g != 0 {
		gen = fmt.Sprintf("%d/%d", GenerationRound(g), GenerationOwner(g))
	}
	wants := "-"
	if len(d.Wants) > 0 {
		wants = strings.Trim(strings.ReplaceAll(fmt.Sprint(d.Wants), " ", ","), "[]")
	}
	return []string{token, gen, wants}, nil
}
