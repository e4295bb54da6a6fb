package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Limits on what a client reads from the daemon.
const (
	maxResponseBytes = 32 << 20 // a status of a large cluster stays far below
	maxErrorBytes    = 64 << 10
)

// Client talks to a daemon's control socket. It keeps at most two idle
// connections for reuse (Close drops them); the zero value is not usable,
// call NewClient. Methods are safe for concurrent use.
//
// Every method's error is one of:
//   - a *ConnectError (errors.Is ErrUnreachable or ErrPermission): no daemon
//     could be asked;
//   - an *Error: the daemon answered with a failure (its message, its code);
//   - the context's error, wrapped, when ctx ended first;
//   - an error describing a malformed answer.
type Client struct {
	path   string
	daemon string
	hc     *http.Client
}

// NewClient returns a client for the daemon serving the socket at path.
// daemon is the daemon's name ("timed"), used only to make error messages
// say what to start; it may be empty.
func NewClient(path, daemon string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		// Nothing between us and the daemon: no proxy, no compression.
		Proxy:              nil,
		DisableCompression: true,
		MaxIdleConns:       2,
		IdleConnTimeout:    30 * time.Second,
		// No ResponseHeaderTimeout: a lock acquire answers when it has the
		// lock. Callers bound every call with their context.
	}
	return &Client{path: path, daemon: daemon, hc: &http.Client{Transport: tr}}
}

// Path returns the socket the client talks to.
func (c *Client) Path() string { return c.path }

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Get fetches path and decodes the JSON answer into out (ignored if nil, or
// if the daemon answered 204 No Content).
func (c *Client) Get(ctx context.Context, path string, out any) error {
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return c.decode(ctx, resp, out)
}

// Post sends in as JSON (no body if in is nil) and decodes the answer into
// out as Get does.
func (c *Client) Post(ctx context.Context, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encoding the request to %s: %w", path, err)
		}
	}
	resp, err := c.do(ctx, http.MethodPost, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return c.decode(ctx, resp, out)
}

// Stream GETs path and calls fn with each JSON object the daemon sends, in
// order, until the daemon ends the stream (nil, or the daemon's *Error),
// fn returns an error (returned as is), or ctx ends (its error, wrapped).
func (c *Client) Stream(ctx context.Context, path string, fn func(json.RawMessage) error) error {
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return readError(resp)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			// The trailer is only known once the body is consumed.
			if t := resp.Trailer.Get(trailerError); t != "" {
				return parseError(resp.StatusCode, []byte(t))
			}
			return nil
		}
		if err != nil {
			return c.readFailure(ctx, err)
		}
		if err := fn(raw); err != nil {
			return err
		}
	}
}

func (c *Client) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("ctl: request path %q must start with /", path)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	// The host part is never used to route: the transport always dials the
	// socket. "ctl" keeps logs and errors readable.
	req, err := http.NewRequestWithContext(ctx, method, "http://ctl"+path, rd)
	if err != nil {
		return nil, fmt.Errorf("ctl: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("waiting for the daemon at %s: %w", c.path, ctx.Err())
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, &ConnectError{Path: c.path, Daemon: c.daemon, Op: "connect", Err: op.Err}
		}
		return nil, &ConnectError{Path: c.path, Daemon: c.daemon, Op: "read", Err: err}
	}
	return resp, nil
}

func (c *Client) decode(ctx context.Context, resp *http.Response, out any) error {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return readError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBytes)) // lets the connection be reused
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return c.readFailure(ctx, err)
	}
	if len(b) > maxResponseBytes {
		return fmt.Errorf("the daemon at %s answered more than %d bytes", c.path, maxResponseBytes)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("unexpected answer from the daemon at %s: %w", c.path, err)
	}
	return nil
}

// readFailure classifies an error while reading an answer.
func (c *Client) readFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("waiting for the daemon at %s: %w", c.path, ctx.Err())
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("malformed answer from the daemon at %s: %w", c.path, err)
	}
	return &ConnectError{Path: c.path, Daemon: c.daemon, Op: "read", Err: err}
}

// readError turns an error response into an *Error.
func readError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	return parseError(resp.StatusCode, b)
}

func parseError(status int, b []byte) *Error {
	var eb errorBody
	if err := json.Unmarshal(b, &eb); err == nil && eb.Error != "" {
		if eb.Code == "" {
			eb.Code = codeFor(status)
		}
		return &Error{Status: status, Code: eb.Code, Msg: eb.Error}
	}
	// Not one of ours (a net/http default answer): keep what it said.
	msg := strings.TrimSpace(string(b))
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &Error{Status: status, Code: codeFor(status), Msg: fmt.Sprintf("the daemon answered %d: %s", status, msg)}
}

func codeFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusGatewayTimeout:
		return CodeTimeout
	case http.StatusServiceUnavailable:
		return CodeUnavailable
	}
	return CodeInternal
}
