package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

type event struct {
	Seq int `json:"seq"`
}

func TestStreamClientCancel(t *testing.T) {
	handlerDone := make(chan error, 1)
	_, c := serve(t, ListenOptions{}, func(s *Server) {
		s.HandleStream(http.MethodGet, "/v1/watch", func(r *http.Request, send func(any) error) error {
			var err error
			defer func() { handlerDone <- err }()
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-r.Context().Done():
					err = r.Context().Err()
					return nil
				case <-tick.C:
					if err = send(event{Seq: i}); err != nil {
						return err
					}
				}
			}
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []int
	err := c.Stream(ctx, "/v1/watch", func(raw json.RawMessage) error {
		var e event
		if err := json.Unmarshal(raw, &e); err != nil {
			return err
		}
		got = append(got, e.Seq)
		if len(got) == 3 {
			cancel() // the user pressed ^C
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Stream after cancel = %v, want context.Canceled", err)
	}
	if len(got) < 3 || got[0] != 0 || got[1] != 1 || got[2] != 2 {
		t.Errorf("objects = %v, want 0, 1, 2 first, in order", got)
	}
	select {
	case err := <-handlerDone:
		if err == nil {
			t.Errorf("handler ended without seeing its context end")
		}
	case <-time.After(hangGuard):
		t.Fatalf("stream handler still running %v after the client went away", hangGuard)
	}
}

func TestStreamEnds(t *testing.T) {
	_, c := serve(t, ListenOptions{}, func(s *Server) {
		s.HandleStream(http.MethodGet, "/three", func(r *http.Request, send func(any) error) error {
			for i := range 3 {
				if err := send(event{Seq: i}); err != nil {
					return err
				}
			}
			return nil
		})
		s.HandleStream(http.MethodGet, "/fail-late", func(r *http.Request, send func(any) error) error {
			send(event{Seq: 0})
			send(event{Seq: 1})
			return Conflict("leadership lost")
		})
		s.HandleStream(http.MethodGet, "/fail-early", func(r *http.Request, send func(any) error) error {
			return NotFound("no such election")
		})
		s.HandleStream(http.MethodGet, "/empty", func(r *http.Request, send func(any) error) error { return nil })
	})
	ctx := ctxTimeout(t, hangGuard)
	collect := func(path string) ([]int, error) {
		var got []int
		err := c.Stream(ctx, path, func(raw json.RawMessage) error {
			var e event
			if err := json.Unmarshal(raw, &e); err != nil {
				return err
			}
			got = append(got, e.Seq)
			return nil
		})
		return got, err
	}

	if got, err := collect("/three"); err != nil || len(got) != 3 {
		t.Errorf("/three: %v, %v; want 3 objects and nil", got, err)
	}
	got, err := collect("/fail-late")
	var e *Error
	if len(got) != 2 || !errors.As(err, &e) || e.Code != CodeConflict || e.Msg != "leadership lost" {
		t.Errorf("/fail-late: %v, %v; want 2 objects then the conflict from the trailer", got, err)
	}
	got, err = collect("/fail-early")
	if len(got) != 0 || !errors.As(err, &e) || e.Status != 404 || e.Msg != "no such election" {
		t.Errorf("/fail-early: %v, %v; want a 404", got, err)
	}
	if got, err := collect("/empty"); err != nil || len(got) != 0 {
		t.Errorf("/empty: %v, %v", got, err)
	}
	// fn's error stops the stream and comes back as is.
	stop := errors.New("seen enough")
	if err := c.Stream(ctx, "/three", func(json.RawMessage) error { return stop }); err != stop {
		t.Errorf("fn error: %v, want it returned as is", err)
	}
}

// Close ends streams at once (no grace) and tells the client why.
func TestStreamCancelledByClose(t *testing.T) {
	sent := make(chan struct{})
	// Streams get no grace: under an hour's, Close returning at all says
	// the stream was not granted it.
	s, c := serve(t, ListenOptions{Grace: time.Hour}, func(s *Server) {
		s.HandleStream(http.MethodGet, "/v1/watch", func(r *http.Request, send func(any) error) error {
			if err := send(event{Seq: 1}); err != nil {
				return err
			}
			close(sent)
			<-r.Context().Done()
			return nil
		})
	})
	errc := make(chan error, 1)
	go func() {
		errc <- c.Stream(ctxTimeout(t, hangGuard), "/v1/watch", func(json.RawMessage) error { return nil })
	}()
	<-sent
	waitClosed(t, closeAsync(s))
	err := <-errc
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeUnavailable || !strings.Contains(e.Msg, "shutting down") {
		t.Errorf("Stream at Close = %v, want unavailable: shutting down", err)
	}
}

func TestStreamSendAfterEnd(t *testing.T) {
	sendc := make(chan func(any) error, 1)
	_, c := serve(t, ListenOptions{}, func(s *Server) {
		s.HandleStream(http.MethodGet, "/leak", func(r *http.Request, send func(any) error) error {
			sendc <- send
			return nil
		})
	})
	if err := c.Stream(ctxTimeout(t, hangGuard), "/leak", func(json.RawMessage) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// A send kept past the handler's return must fail, not write into a
	// finished response.
	if err := (<-sendc)(event{}); err == nil {
		t.Error("send after the handler returned succeeded")
	}
}
