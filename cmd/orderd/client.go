package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/pkg/order"
	"github.com/synclab/synclab/pkg/order/rsm"
	"github.com/synclab/synclab/pkg/wire"
)

// sendRequest is POST /v1/send.
type sendRequest struct {
	Order   order.Order `json:"order"`
	Message string      `json:"message"`
	// Wait asks for the message's own delivery at this node (its place
	// in the order, and the state machine's answer).
	Wait bool `json:"wait"`
	// Plain says a total-order message is no command for the state
	// machine (`orderd send`; `orderd apply` leaves it false, as do
	// clients older than it): it travels marked (rsm.PlainPrefix).
	Plain bool `json:"plain,omitempty"`
}

// sendReply answers it.
type sendReply struct {
	Delivered *deliveryView `json:"delivered,omitempty"`
	// Skipped: the message is committed, and this member did not
	// deliver it one by one: it caught up from a snapshot past it.
	Skipped *order.Skipped `json:"skipped,omitempty"`
}

// deliveryView is a delivery as `orderd log` and `orderd send --wait`
// show it: the message's bytes (base64 in JSON, as delivered), and beside
// them its text, without the plain mark, when it is UTF-8, so that a grep
// of the JSON finds what was sent.
type deliveryView struct {
	order.Delivery
	Text string `json:"text,omitempty"`
	// Plain: a total-order message that is no command (orderd send).
	Plain bool `json:"plain,omitempty"`
}

func viewOf(d order.Delivery) deliveryView {
	text, plain := rsm.Text(d.Message)
	v := deliveryView{Delivery: d, Plain: plain && d.Order == order.TotalOrder}
	if !v.Plain {
		text = d.Message
	}
	if utf8.Valid(text) {
		v.Text = string(text)
	}
	return v
}

// stateView is GET /v1/state.
type stateView struct {
	Balance string            `json:"balance"`
	Cents   int64             `json:"cents"`
	KV      map[string]string `json:"kv"`
	Applied uint64            `json:"applied"`
}

func coreOf(n *node.Node) (*order.Core, error) {
	c, ok := n.Core().(*order.Core)
	if !ok {
		return nil, fmt.Errorf("the daemon's core (%T) is not orderd's", n.Core())
	}
	return c, nil
}

func attach(cc *cli.Context, d *daemon.Daemon) error {
	clk := d.Config().Clock
	me := d.Config().ID
	total, err := order.ParseTotal(cc.String("total"))
	if err != nil {
		return app.Usagef("--total: %v", err)
	}
	d.Handle(http.MethodPost, "/v1/send", func(r *http.Request) (any, error) {
		var req sendRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
			return nil, ctl.BadRequest("send: " + err.Error())
		}
		if req.Order == 0 {
			req.Order = order.FIFO
		}
		msg := []byte(req.Message)
		if req.Plain && req.Order == order.TotalOrder {
			msg = rsm.Plain(msg)
		}
		if len(msg) > wire.MaxOrderMessage {
			return nil, ctl.BadRequest(fmt.Sprintf("send: message of %d bytes, at most %d", len(msg), wire.MaxOrderMessage))
		}
		// A submission to the sequencer is not written here: it is
		// answered once its entry is committed (on a majority of disks),
		// which this node learns when it delivers it. The others are
		// answered once written here (DoSaved: a failed write is an
		// error, not "sent"), or delivered with --wait. A failed write
		// takes the message back (order.Core.Withdraw) whenever nothing
		// of the write can be read back: answered not_sent, it is never
		// delivered, and the client may send it again; otherwise it is
		// kept, answered not_saved: it may still be delivered.
		sequenced := req.Order == order.TotalOrder && total == order.Sequencer
		// Nothing is sent while the member stands back (refused, 503
		// stepped_back), nor before the members' configurations are
		// heard at the start (it waits): checked in the send's own turn
		// of the loop. A step back later in that turn (a frame of the
		// same batch, the tick after the call) restarts the core
		// without the message, never drained: daemon.HeldError, not
		// sent.
		events, unsubscribe := d.Subscribe() // before the send: no delivery is missed
		defer unsubscribe()
		var before, sid uint64
		var sentBy *order.Core // the core that took the message
		derr := d.DoActiveSaved(r.Context(), func(n *node.Node) {
			if sentBy, err = coreOf(n); err != nil {
				return
			}
			before = sentBy.LastIndex()
			if err = sentBy.Multicast(clk.Now(), req.Order, msg); err == nil && sequenced {
				sid = sentBy.Submission()
			}
		})
		var held *daemon.HeldError
		if sequenced && !errors.As(derr, &held) && (errors.Is(derr, daemon.ErrNotSaved) || errors.Is(derr, daemon.ErrWithdrawn)) {
			// The write of the turn failed (another send's, a record's):
			// it held nothing of a submission, which leaves unwritten and
			// is resent until the sequencer numbers it.
			derr = nil
		}
		if derr != nil && !errors.Is(derr, daemon.ErrNotSaved) && !errors.Is(derr, daemon.ErrWithdrawn) {
			return nil, derr
		} else if err != nil {
			return nil, ctl.Conflict(err.Error())
		} else if derr != nil {
			return nil, notSent(derr)
		}
		if !req.Wait && !sequenced {
			return sendReply{}, nil
		}
		// Wait for the message's delivery here: by its submission ID, or
		// this node's next one of that order, from itself, with that text
		// (its own messages are delivered in the order it sent them).
		for {
			var found *order.Delivery
			var skipped *order.Skipped
			var pending string
			committed := false
			restarted := false
			if derr := d.Do(r.Context(), func(n *node.Node) {
				c, _ := coreOf(n)
				if restarted = c != sentBy; restarted {
					// A step back restarted the core from its disk:
					// the new one knows nothing of the submission.
					return
				}
				for _, dl := range c.History(before) {
					if dl.Order == req.Order && dl.Sender == me && (sequenced && dl.SID == sid || !sequenced && bytes.Equal(dl.Message, msg)) {
						found = &dl
						return
					}
					if dl.Skipped != nil && sequenced {
						skipped = dl.Skipped
					}
				}
				// Delivered, and out of the history already (a flood).
				committed = sequenced && !c.Submitting(sid)
				if _, _, known := c.Election().Leader(); total == order.Sequencer && !known {
					pending = ": no sequencer known: an election is running"
				}
			}); derr != nil {
				if r.Context().Err() != nil {
					return nil, notDelivered(sequenced, pending)
				}
				return nil, derr
			}
			switch {
			case restarted && sequenced:
				// "Sent" only once committed, which no one can tell now:
				// the old core may have had it numbered (then it is
				// delivered everywhere) or not (then nowhere, as the new
				// core does not resend it).
				return nil, lostTrack()
			case found != nil && req.Wait:
				v := viewOf(*found)
				return sendReply{Delivered: &v}, nil
			case found != nil:
				return sendReply{}, nil
			case committed && req.Wait && skipped != nil:
				return sendReply{Skipped: skipped}, nil
			case committed:
				return sendReply{}, nil
			}
			woke, own := waitDelivery(r.Context(), events, me, sid, deliveryPoll)
			if !woke {
				return nil, notDelivered(sequenced, pending)
			}
			if own && !req.Wait {
				// The event is this submission's own delivery here,
				// emitted once it is written: committed, without
				// another turn of the loop to look it up.
				return sendReply{}, nil
			}
		}
	})
	d.Handle(http.MethodGet, "/v1/log", func(r *http.Request) (any, error) {
		after, err := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
		if err != nil && r.URL.Query().Get("after") != "" {
			return nil, ctl.BadRequest("after: want a delivery index")
		}
		var hist []order.Delivery
		if derr := d.Do(r.Context(), func(n *node.Node) {
			var c *order.Core
			if c, err = coreOf(n); err == nil {
				hist = c.History(after)
			}
		}); derr != nil {
			return nil, derr
		}
		out := make([]deliveryView, 0, len(hist))
		for _, dl := range hist {
			out = append(out, viewOf(dl))
		}
		return out, err
	})
	d.Handle(http.MethodGet, "/v1/state", func(r *http.Request) (any, error) {
		var v stateView
		var err error
		if derr := d.Do(r.Context(), func(n *node.Node) {
			var c *order.Core
			if c, err = coreOf(n); err != nil {
				return
			}
			m := c.Machine().(*rsm.Machine)
			v = stateView{Balance: rsm.Format(m.Cents), Cents: m.Cents, KV: map[string]string{}, Applied: m.Applied}
			for _, k := range m.Keys() {
				v.KV[k], _ = m.Get(k)
			}
		}); derr != nil {
			return nil, derr
		}
		return v, err
	})
	return nil
}

// Codes of a send whose write failed (503): what the client may do next
// depends on which.
const (
	// codeNotSent: the message was taken back; it is delivered nowhere,
	// ever: sending it again is safe.
	codeNotSent = "not_sent"
	// codeNotSaved: the message is kept and goes out with the next write
	// that succeeds, or is lost if the daemon stops first: it may still
	// be delivered, so sending it again may deliver it twice.
	codeNotSaved = "not_saved"
)

// notSent is the answer to a send whose write failed (derr: DoSaved's
// ErrWithdrawn or ErrNotSaved), or whose turn of the loop ended in a step
// back (daemon.HeldError), saying what happened and whether the client
// may send again.
func notSent(derr error) *ctl.Error {
	cause := "could not write the message to its disk (a full or broken disk: see its log and `orderd status`)"
	var held *daemon.HeldError
	stepped := errors.As(derr, &held)
	if stepped {
		cause = "stepped back from configuration agreement while taking the message (see its log and `orderd status`)"
	}
	if errors.Is(derr, daemon.ErrWithdrawn) {
		how := "so it took it back"
		if stepped {
			how = "and restarted its core from its disk without it"
		}
		return ctl.Errorf(http.StatusServiceUnavailable, codeNotSent,
			"send: not sent: this member %s, %s: it is delivered nowhere, now or later, and sending it again is safe", cause, how)
	}
	how := "and cannot tell whether the write reached it: the message is kept and may still be delivered (with the next write that succeeds)"
	if stepped {
		how = "and did not write it: the message is kept and may still be delivered (once the configurations agree and a write holds it)"
	}
	return ctl.Errorf(http.StatusServiceUnavailable, codeNotSaved,
		"send: not saved: this member %s, %s, or be lost if orderd stops first; sending it again may deliver it twice: look for it in `orderd log` first", cause, how)
}

// lostTrack is the answer to a sequenced send whose core a step back
// restarted while the send waited for its commit.
func lostTrack() *ctl.Error {
	return ctl.Errorf(http.StatusServiceUnavailable, codeNotSaved,
		"send: not known: this member stepped back from configuration agreement while the message waited for its commit (see its log and `orderd status`), "+
			"and restarted its core without it: the sequencer may have numbered it (then it is delivered everywhere) or not (then nowhere); "+
			"sending it again may deliver it twice: look for it in `orderd log` first")
}

// deliveryPoll is how long waitDelivery waits for an event before the
// caller looks at the log again anyway.
const deliveryPoll = 100 * time.Millisecond

// waitDelivery waits for a delivery of this node's own message (or an
// event lost to a slow read, or pollEvery: the caller looks again); woke
// is false once ctx is done. own says the delivery is the sequenced
// submission sid itself (sid 0: none).
func waitDelivery(ctx context.Context, events <-chan daemon.EventRecord, me uint32, sid uint64, pollEvery time.Duration) (woke, own bool) {
	poll := time.NewTimer(pollEvery)
	defer poll.Stop()
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return ctx.Err() == nil, false
			}
			if e.Lost > 0 {
				return true, false
			}
			if e.Name == order.EventDelivered && fmt.Sprint(e.Attrs["sender"]) == strconv.FormatUint(uint64(me), 10) {
				own = sid != 0 && e.Attrs["order"] == order.TotalOrder.String() && fmt.Sprint(e.Attrs["sid"]) == strconv.FormatUint(sid, 10)
				return true, own
			}
		case <-poll.C:
			return true, false
		case <-ctx.Done():
			return false, false
		}
	}
}

func notDelivered(sequenced bool, pending string) error {
	if sequenced {
		return ctl.Timeout("submitted to the sequencer, not committed yet" + pending + ": it may still be delivered; see orderd status")
	}
	return ctl.Timeout("sent, but not yet delivered here" + pending + "; see orderd status")
}

func sendCommand() *cli.Command {
	return &cli.Command{
		Name:      "send",
		Usage:     "multicast MESSAGE to every member (this one included)",
		ArgsUsage: "MESSAGE...",
		Flags: []cli.Flag{app.ControlFlag(name),
			&cli.StringFlag{Name: "order", Value: "fifo", Usage: "fifo, causal or total"},
			&cli.BoolFlag{Name: "wait", Usage: "wait until this node delivers it, and print the delivery"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "how long to wait for the answer: --wait's delivery, or --order total's commit (with a sequencer, a total-order send is answered once a majority holds it)"},
			app.JSONFlag},
		Action: func(c *cli.Context) error {
			o, err := order.ParseOrder(c.String("order"))
			if err != nil {
				return app.Usagef("--order: %v", err)
			}
			return send(c, o, c.Bool("wait"))
		},
	}
}

func send(c *cli.Context, o order.Order, wait bool) error {
	msg := strings.Join(c.Args().Slice(), " ")
	// `send` is for messages; only `apply` hands commands to the state
	// machine (a total-order send travels marked as plain, one byte).
	plain := c.Command.Name == "send" && o == order.TotalOrder
	limit := wire.MaxOrderMessage
	if plain {
		limit -= len(rsm.PlainPrefix)
	}
	switch {
	case msg == "":
		return app.Usagef("%s needs a message", c.Command.Name)
	case len(msg) > limit:
		return app.Usagef("message of %d bytes, at most %d", len(msg), limit)
	}
	timeout := 10 * time.Second
	if c.IsSet("timeout") {
		timeout = c.Duration("timeout")
	}
	ctx, cancel := context.WithTimeout(c.Context, timeout)
	defer cancel()
	var rep sendReply
	if err := app.Client(c).Post(ctx, "/v1/send", sendRequest{Order: o, Message: msg, Wait: wait, Plain: plain}, &rep); err != nil {
		return err
	}
	if k := rep.Skipped; k != nil {
		fmt.Fprintf(c.App.ErrWriter, "committed, but not delivered here one by one: this member caught up from member %d's snapshot past it (numbers %d to %d); "+
			"its result is in the state (orderd state), not known here\n", k.Via, k.From, k.To)
		return nil
	}
	if rep.Delivered == nil {
		return nil
	}
	if c.Bool("json") {
		b, _ := json.Marshal(rep.Delivered)
		fmt.Fprintln(c.App.Writer, string(b))
		return nil
	}
	printDelivery(c.App.Writer, *rep.Delivered)
	if rep.Delivered.Error != "" {
		return app.ExitError{Code: 1, Msg: "refused by the state machine (at every replica alike): " + strings.TrimPrefix(rep.Delivered.Error, rsm.ErrCommand.Error()+": ")}
	}
	return nil
}

func applyCommand() *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "apply a command to the replicated state machine, in total order, and print its result here",
		ArgsUsage: "'deposit 100' | 'withdraw 5.50' | 'interest 1%' | 'balance 1000' | 'set KEY VALUE' | 'del KEY'",
		Flags: []cli.Flag{app.ControlFlag(name),
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "how long to wait for the command's delivery"},
			app.JSONFlag},
		Action: func(c *cli.Context) error { return send(c, order.TotalOrder, true) },
	}
}

func getState(c *cli.Context) (stateView, error) {
	ctx, cancel := context.WithTimeout(c.Context, 5*time.Second)
	defer cancel()
	var v stateView
	err := app.Client(c).Get(ctx, "/v1/state", &v)
	return v, err
}

func stateCommand() *cli.Command {
	return &cli.Command{
		Name:  "state",
		Usage: "print this replica's account and keys",
		Flags: []cli.Flag{app.ControlFlag(name), app.JSONFlag},
		Action: func(c *cli.Context) error {
			v, err := getState(c)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				b, _ := json.Marshal(v)
				fmt.Fprintln(c.App.Writer, string(b))
				return nil
			}
			fmt.Fprintf(c.App.Writer, "balance %s (%s applied, %s)\n", v.Balance, app.Plural(v.Applied, "command"), app.Plural(uint64(len(v.KV)), "key"))
			return nil
		},
	}
}

func getCommand() *cli.Command {
	return &cli.Command{
		Name:      "get",
		Usage:     "print KEY's value in this replica's map (exit 1 if unset)",
		ArgsUsage: "KEY",
		Flags:     []cli.Flag{app.ControlFlag(name)},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return app.Usagef("get takes one KEY")
			}
			v, err := getState(c)
			if err != nil {
				return err
			}
			val, ok := v.KV[c.Args().First()]
			if !ok {
				return app.ExitError{Code: 1, Msg: fmt.Sprintf("no key %q", c.Args().First())}
			}
			fmt.Fprintln(c.App.Writer, val)
			return nil
		},
	}
}

func logCommand() *cli.Command {
	return &cli.Command{
		Name:  "log",
		Usage: "print the delivered messages in delivery order (sender, timestamps, delivery time)",
		Description: "Each delivery has an index, this member's counter: increasing, each shown once, never given to two messages " +
			"(a restart continues 1024 past the last one written). The log is this process's deliveries since it started " +
			"(the last 1024): a restart starts it afresh, which the first line says; the replicated state (orderd state) is kept. " +
			"--json prints one delivery per line, the message as base64 (its bytes) and, when it is UTF-8, as text. " +
			"A total-order delivery (sequencer) is announced before this member writes its record: after a crash in between, " +
			"the restarted member delivers it again, with the same seq (its number in the log) and message and a new index; " +
			"deduplicate total-order deliveries by seq across restarts (with --follow too). " +
			"A member more than the log's 256 entries behind catches up from a snapshot of the replicated state: " +
			"the numbers it thereby did not deliver one by one are shown as one record, \"skipped numbers N to M\" " +
			"(JSON: \"skipped\": {\"from\", \"to\", \"via\"}, seq M), so no number is ever passed over in silence.",
		Flags: []cli.Flag{app.ControlFlag(name), app.JSONFlag,
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing deliveries as they come, until interrupted"},
			&cli.Uint64Flag{Name: "after", Usage: "only deliveries after index `N`"}},
		Action: func(c *cli.Context) error {
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			after := c.Uint64("after")
			cl := app.Client(c)
			if !c.Bool("json") {
				if err := logHeader(ctx, c.App.Writer, cl); err != nil {
					return err
				}
			}
			for {
				var ds []deliveryView
				qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err := cl.Get(qctx, "/v1/log?after="+strconv.FormatUint(after, 10), &ds)
				cancel()
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				for _, d := range ds {
					if c.Bool("json") {
						b, _ := json.Marshal(d)
						fmt.Fprintln(c.App.Writer, string(b))
					} else {
						printDelivery(c.App.Writer, d)
					}
					after = d.Index
				}
				if !c.Bool("follow") {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(50 * time.Millisecond):
				}
			}
		},
	}
}

// logHeader says whose deliveries `orderd log` prints: this process's,
// since it started (a restart hides the ones before).
func logHeader(ctx context.Context, w io.Writer, cl *ctl.Client) error {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var st struct {
		Started time.Time `json:"started"`
		Node    struct {
			Incarnation uint64 `json:"incarnation"`
		} `json:"node"`
	}
	if err := cl.Get(qctx, "/v1/status", &st); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "# deliveries of this orderd since it started at %s (incarnation %d); a restart starts this list afresh, the replicated state is kept\n",
		st.Started.Format(time.RFC3339), st.Node.Incarnation)
	return err
}

func printDelivery(w io.Writer, d deliveryView) {
	if k := d.Skipped; k != nil {
		fmt.Fprintf(w, "%d %s %s skipped numbers %d to %d (not delivered here: caught up from member %d's snapshot)\n",
			d.Index, d.At.Format(time.RFC3339Nano), d.Order, k.From, k.To, k.Via)
		return
	}
	stamp := ""
	switch {
	case d.Vector != nil:
		stamp = fmt.Sprintf(" vector=%v", d.Vector)
	case d.Lamport != 0:
		stamp = fmt.Sprintf(" lamport=%d", d.Lamport)
	}
	res := ""
	if d.Result != "" {
		res = " -> " + d.Result
	}
	if d.Error != "" {
		res = " -> refused: " + d.Error
	}
	var msg any = d.Message
	if d.Text != "" || len(d.Message) == 0 {
		msg = d.Text
	}
	fmt.Fprintf(w, "%d %s %s from %d seq=%d%s %q%s\n", d.Index, d.At.Format(time.RFC3339Nano), d.Order, d.Sender, d.Seq, stamp, msg, res)
}
