package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
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

func (s CtlSource) Events(ctx context.Context, fn func(json.RawMessage) error) error {
	return s.C.Stream(ctx, "/v1/events", fn)
}

var _ Source = CtlSource{}

// statusTooMany is the daemon's answer to a status query asked too soon.
const statusTooMany = http.StatusTooManyRequests
