package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/daemon"
)

// CtlSource reads the lab through a daemon's control socket.
type CtlSource struct{ C *ctl.Client }

func (s CtlSource) Cluster(ctx context.Context, timeout time.Duration) (*daemon.ClusterStatus, error) {
	var st daemon.ClusterStatus
	if err := s.C.Get(ctx, "/v1/cluster?timeout="+url.QueryEscape(timeout.String()), &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func (s CtlSource) Trace(ctx context.Context) (daemon.TraceStatus, error) {
	var st daemon.TraceStatus
	err := s.C.Get(ctx, "/v1/trace", &st)
	return st, err
}

func (s CtlSource) StartTrace(ctx context.Context) (daemon.TraceStatus, error) {
	var st daemon.TraceStatus
	err := s.C.Post(ctx, "/v1/trace/start", daemon.TraceRequest{}, &st)
	return st, err
}

func (s CtlSource) StopTrace(ctx context.Context) (daemon.TraceStatus, error) {
	var st daemon.TraceStatus
	err := s.C.Post(ctx, "/v1/trace/stop", struct{}{}, &st)
	return st, err
}

func (s CtlSource) MemberTrace(ctx context.Context, member, window uint32, after uint64, from time.Time, timeout time.Duration, maxBytes int) (daemon.MemberTrace, error) {
	var mt daemon.MemberTrace
	q := url.Values{}
	q.Set("member", strconv.FormatUint(uint64(member), 10))
	q.Set("window", strconv.FormatUint(uint64(window), 10))
	q.Set("after", strconv.FormatUint(after, 10))
	q.Set("from", strconv.FormatInt(from.UnixNano(), 10))
	q.Set("timeout", timeout.String())
	q.Set("max_bytes", strconv.Itoa(maxBytes))
	err := s.C.Get(ctx, "/v1/cluster/trace?"+q.Encode(), &mt)
	return mt, err
}

func (s CtlSource) Events(ctx context.Context, fn func(json.RawMessage) error) error {
	return s.C.Stream(ctx, "/v1/events", fn)
}

var _ Source = CtlSource{}

// statusTooMany is the daemon's answer to a status query asked too soon.
const statusTooMany = http.StatusTooManyRequests
