package ctl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/synclab/synclab/internal/ctl"
)

// A daemon serves its status and refuses a lock it cannot grant; the CLI
// reads both through a Client.
func Example() {
	dir, err := os.MkdirTemp("", "ctl-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "control.sock")

	s, err := ctl.Listen(sock, ctl.ListenOptions{})
	if err != nil {
		log.Fatal(err)
	}
	s.Handle(http.MethodGet, "/v1/status", func(r *http.Request) (any, error) {
		return map[string]any{"leader": 3, "term": 12}, nil
	})
	s.Handle(http.MethodPost, "/v1/locks/{name}", func(r *http.Request) (any, error) {
		return nil, ctl.Conflict(fmt.Sprintf("lock %s is held by node 3", r.PathValue("name")))
	})
	go s.Serve()
	defer s.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := ctl.NewClient(sock, "electd")
	var st struct{ Leader, Term int }
	if err := c.Get(ctx, "/v1/status", &st); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("leader %d in term %d\n", st.Leader, st.Term)

	err = c.Post(ctx, "/v1/locks/db", map[string]string{"holder": "backup"}, nil)
	var e *ctl.Error
	if errors.As(err, &e) {
		fmt.Printf("%d %s: %v\n", e.Status, e.Code, err)
	}
	// Output:
	// leader 3 in term 12
	// 409 conflict: lock db is held by node 3
}

// Streams deliver one JSON object per call of fn until the daemon ends the
// stream or the caller's context ends.
func ExampleClient_Stream() {
	dir, err := os.MkdirTemp("", "ctl-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "control.sock")

	s, err := ctl.Listen(sock, ctl.ListenOptions{})
	if err != nil {
		log.Fatal(err)
	}
	s.HandleStream(http.MethodGet, "/v1/watch", func(r *http.Request, send func(any) error) error {
		for term := 1; term <= 3; term++ {
			if err := send(map[string]int{"term": term, "leader": term + 1}); err != nil {
				return err
			}
		}
		return ctl.Unavailable("election lost its quorum")
	})
	go s.Serve()
	defer s.Close()

	err = ctl.NewClient(sock, "electd").Stream(context.Background(), "/v1/watch", func(obj json.RawMessage) error {
		fmt.Println(string(obj))
		return nil
	})
	fmt.Println("stream ended:", err)
	// Output:
	// {"leader":2,"term":1}
	// {"leader":3,"term":2}
	// {"leader":4,"term":3}
	// stream ended: election lost its quorum
}

// The error a CLI prints when the daemon is not running.
func ExampleConnectError() {
	err := ctl.NewClient("/nonexistent/timed.sock", "timed").Get(context.Background(), "/v1/status", nil)
	fmt.Println(errors.Is(err, ctl.ErrUnreachable))
	fmt.Println(err)
	// Output:
	// true
	// cannot reach the daemon at /nonexistent/timed.sock: no such socket (is "timed run" running? use --control PATH to pick another daemon)
}
