package ctl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/synclab/synclab/internal/rawsock"
)

// Limits on what a client reads from the daemon.
const (
	maxResponseBytes = 32 << 20 // a status of a large cluster stays far below
	maxErrorBytes    = 64 << 10
)

// Client talks to a daemon's control socket over HTTP/1.1. Each call runs
// on the caller's goroutine: it writes its request on a connection kept
// from an earlier call (or a new one) and reads the answer itself, with no
// transport goroutine in between (net/http's client hands every request
// to a writer and every answer back from a reader goroutine, which
// doubled a local call's time). At most maxIdleConns connections are kept
// for reuse, each for at most idleConnTimeout (Close drops them); the zero
// value is not usable, call NewClient. Methods are safe for concurrent
// use: concurrent calls use connections of their own.
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

	mu    sync.Mutex
	idle  []*clientConn // most recently used last
	dials uint64        // connections opened, for tests
}

// Connection reuse. The server drops a connection idle for a minute
// (Server's IdleTimeout); the client lets go of it well before, so that a
// request is never written on a connection the server is closing.
const (
	maxIdleConns    = 2
	idleConnTimeout = 30 * time.Second
)

// NewClient returns a client for the daemon serving the socket at path.
// daemon is the daemon's name ("timed"), used only to make error messages
// say what to start; it may be empty.
func NewClient(path, daemon string) *Client {
	return &Client{path: path, daemon: daemon}
}

// Path returns the socket the client talks to.
func (c *Client) Path() string { return c.path }

// Close releases idle connections. The client stays usable: a later call
// opens a new one.
func (c *Client) Close() {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	for _, cc := range idle {
		cc.conn.Close()
	}
}

// Get fetches path and decodes the JSON answer into out (ignored if nil, or
// if the daemon answered 204 No Content).
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.call(ctx, http.MethodGet, path, nil, out)
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
	return c.call(ctx, http.MethodPost, path, body, out)
}

func (c *Client) call(ctx context.Context, method, path string, body []byte, out any) error {
	resp, cc, err := c.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	drained, err := c.decode(ctx, resp, out)
	c.release(cc, resp, drained)
	return err
}

// Stream GETs path and calls fn with each JSON object the daemon sends, in
// order, until the daemon ends the stream (nil, or the daemon's *Error),
// fn returns an error (returned as is), or ctx ends (its error, wrapped).
// Each object reaches fn as soon as its line is read: the daemon flushes
// every object as it sends it.
func (c *Client) Stream(ctx context.Context, path string, fn func(json.RawMessage) error) error {
	resp, cc, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	drained := false
	defer func() { c.release(cc, resp, drained) }()
	if resp.StatusCode != http.StatusOK {
		drained, err = readError(resp)
		return err
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			drained = true
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

// clientConn is one connection to the daemon and its read buffer.
type clientConn struct {
	conn   net.Conn
	br     *bufio.Reader
	reused bool      // it carried an earlier call
	idleAt time.Time // when it went idle
	// stop ends the watch on the call's context (context.AfterFunc);
	// false: the context ended and interrupted the connection.
	stop func() bool
}

// interrupt makes the call's blocked read or write return at once.
func (cc *clientConn) interrupt() { cc.conn.SetDeadline(time.Unix(1, 0)) }

// do sends one request and reads the answer's head. The caller reads the
// body and hands the connection back with release.
func (c *Client) do(ctx context.Context, method, path string, body []byte) (*http.Response, *clientConn, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, nil, fmt.Errorf("ctl: request path %q must start with /", path)
	}
	// Parsed and escaped as net/http would: a lock name with a space
	// travels as %20 and the server's PathValue gives it back whole.
	u, err := url.Parse(path)
	if err != nil {
		return nil, nil, fmt.Errorf("ctl: %w", err)
	}
	req := appendRequest(nil, method, u.RequestURI(), body)
	for {
		cc, err := c.conn(ctx)
		if err != nil {
			return nil, nil, err
		}
		cc.stop = context.AfterFunc(ctx, cc.interrupt)
		resp, sent, err := cc.exchange(req, method)
		if err == nil {
			return resp, cc, nil
		}
		interrupted := !cc.stop()
		cc.conn.Close()
		if interrupted || ctx.Err() != nil {
			return nil, nil, fmt.Errorf("waiting for the daemon at %s: %w", c.path, ctx.Err())
		}
		// A kept connection the daemon closed while it was idle (a
		// restart): the request never reached a handler. It is sent
		// again on a new connection if it did not leave at all, or if it
		// is a GET, which the daemon may answer twice.
		if cc.reused && (!sent || method == http.MethodGet && errors.Is(err, io.EOF)) {
			continue
		}
		return nil, nil, &ConnectError{Path: c.path, Daemon: c.daemon, Op: "read", Err: err}
	}
}

// exchange writes req and reads the answer's head; sent says whether the
// request was written.
func (cc *clientConn) exchange(req []byte, method string) (_ *http.Response, sent bool, _ error) {
	if _, err := cc.conn.Write(req); err != nil {
		// The daemon may have answered and stopped reading before the
		// request was written whole (a body over its limit: 413); that
		// answer is the call's. A connection it had closed reads nothing.
		if resp, rerr := http.ReadResponse(cc.br, &http.Request{Method: method}); rerr == nil {
			return resp, true, nil
		}
		return nil, false, err
	}
	resp, err := http.ReadResponse(cc.br, &http.Request{Method: method})
	return resp, true, err
}

// appendRequest appends an HTTP/1.1 request for target, with body as JSON.
func appendRequest(b []byte, method, target string, body []byte) []byte {
	// The host is never used to route: the socket is the daemon. "ctl"
	// keeps the daemon's logs readable.
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, target...)
	b = append(b, " HTTP/1.1\r\nHost: ctl\r\nAccept: application/json\r\n"...)
	if body != nil {
		b = append(b, "Content-Type: application/json\r\n"...)
	}
	if body != nil || method == http.MethodPost {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	return append(b, body...)
}

// conn returns a kept connection that is still open, or dials a new one.
func (c *Client) conn(ctx context.Context) (*clientConn, error) {
	for {
		c.mu.Lock()
		n := len(c.idle)
		if n == 0 {
			c.dials++
			c.mu.Unlock()
			break
		}
		cc := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		if time.Since(cc.idleAt) < idleConnTimeout && idleOpen(cc.conn) {
			return cc, nil
		}
		cc.conn.Close()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("waiting for the daemon at %s: %w", c.path, ctx.Err())
		}
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		return nil, &ConnectError{Path: c.path, Daemon: c.daemon, Op: "connect", Err: err}
	}
	conn = rawsock.Wrap(conn) // reads and writes that wake no monitor thread
	return &clientConn{conn: conn, br: bufio.NewReaderSize(conn, 4096)}, nil
}

// release keeps cc for the next call when its answer was read whole and
// the daemon keeps the connection open; else it closes it.
func (c *Client) release(cc *clientConn, resp *http.Response, drained bool) {
	interrupted := !cc.stop()
	if interrupted || !drained || resp.Close || cc.br.Buffered() > 0 {
		cc.conn.Close()
		return
	}
	cc.reused, cc.idleAt = true, time.Now()
	c.mu.Lock()
	if len(c.idle) < maxIdleConns {
		c.idle = append(c.idle, cc)
		cc = nil
	}
	c.mu.Unlock()
	if cc != nil {
		cc.conn.Close()
	}
}

// decode reads the answer into out; drained says the body was read whole
// (the connection can carry another call).
func (c *Client) decode(ctx context.Context, resp *http.Response, out any) (drained bool, err error) {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return readError(resp)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return false, c.readFailure(ctx, err)
	}
	if len(b) > maxResponseBytes {
		return false, fmt.Errorf("the daemon at %s answered more than %d bytes", c.path, maxResponseBytes)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return true, nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return true, fmt.Errorf("unexpected answer from the daemon at %s: %w", c.path, err)
	}
	return true, nil
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

// readError turns an error response into an *Error; drained as decode's.
func readError(resp *http.Response) (drained bool, err error) {
	b, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes+1))
	drained = rerr == nil && len(b) <= maxErrorBytes
	return drained, parseError(resp.StatusCode, b[:min(len(b), maxErrorBytes)])
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
