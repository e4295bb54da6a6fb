package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults of ListenOptions.
const (
	DefaultMode               os.FileMode = 0o660
	DefaultMaxBodyBytes                   = 1 << 20 // 1 MiB
	DefaultGrace                          = 2 * time.Second
	DefaultStreamWriteTimeout             = 10 * time.Second
)

// maxSocketPath is the longest path a unix socket address holds on Linux
// (sun_path is 108 bytes with the terminating NUL).
const maxSocketPath = 107

// trailerError is the HTTP trailer that carries the error that ended a
// stream after its first object was sent (the status line is long gone by
// then). Its value is an error body: {"error": ..., "code": ...}.
const trailerError = "Ctl-Error"

// HandlerFunc answers one request. The result is JSON-encoded with status
// 200; a nil result answers 204 No Content. An *Error chooses the status and
// code of the error response; any other error is a 500 "internal", except
// context.DeadlineExceeded (504 "timeout").
//
// The request's context ends when the client goes away or when the server
// closes (after its grace period): blocking handlers (a lock acquire) must
// watch it, and take their own timeout from the request, not from the server.
type HandlerFunc func(r *http.Request) (any, error)

// StreamFunc serves a stream of JSON objects, one per line (NDJSON): send
// writes and flushes one object. The handler returns when r.Context() is
// done (client gone, or the server closing: streams get no grace) or when
// send fails. send is safe for concurrent use.
//
// An error returned before the first send becomes an ordinary error
// response; after it, the error travels in the Ctl-Error trailer and the
// client's Stream returns it.
type StreamFunc func(r *http.Request, send func(v any) error) error

// ListenOptions configure a Server. The zero value is usable.
type ListenOptions struct {
	// Group, when set, names the group (or numeric gid) whose members may
	// use the socket besides root and the daemon's own user: the socket file
	// is given that group and each connection's peer credentials are checked
	// against it.
	Group string
	// Mode is the socket file's permission bits. Default 0660.
	Mode os.FileMode
	// MaxBodyBytes bounds request bodies. Default 1 MiB.
	MaxBodyBytes int64
	// Grace is how long Close lets in-flight requests finish before it
	// cancels them. Default 2 s.
	Grace time.Duration
	// StreamWriteTimeout bounds each write of a stream, so a client that
	// stops reading is dropped instead of blocking its handler. Default 10 s.
	StreamWriteTimeout time.Duration
	// Logger receives refused connections, handler panics and net/http's
	// own complaints. Default slog.Default().
	Logger *slog.Logger

	// cutoff is how long Close lets the handlers it cancelled at the end
	// of the grace write their 503 before it cuts them off. Default
	// 500 ms; a test seam (tests make it long, so that a loaded host is
	// never the reason a 503 is missing).
	cutoff time.Duration
}

func (o *ListenOptions) setDefaults() {
	if o.Mode == 0 {
		o.Mode = DefaultMode
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.StreamWriteTimeout <= 0 {
		o.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.cutoff <= 0 {
		o.cutoff = 500 * time.Millisecond
	}
}

// Server serves the control API on a unix socket. Register handlers with
// Handle and HandleStream (before or while serving), run Serve in its own
// goroutine, and Close to stop.
type Server struct {
	path string
	opts ListenOptions
	log  *slog.Logger
	pol  policy

	ln   *net.UnixListener
	lock *os.File // flock on path+".lock", held while serving
	srv  *http.Server
	mux  *http.ServeMux

	mu     sync.RWMutex
	routes map[string]map[string]http.Handler // pattern -> method -> handler

	// base is every request's root context, cancelled when the grace
	// period ends; streams is cancelled as soon as Close starts.
	base          context.Context
	cancelBase    context.CancelFunc
	streams       context.Context
	cancelStreams context.CancelFunc

	closeOnce sync.Once
	closeErr  error
}

// Listen creates the socket at path and returns a Server ready to Serve.
//
// The parent directory is created (0755) if missing. A socket file left by
// a daemon that died is removed; if a live daemon answers on it, Listen
// fails with an *InUseError. Two daemons starting at once are serialised by
// an flock on path+".lock", which stays on disk (removing a lock file
// re-opens the race it closes).
func Listen(path string, opts ListenOptions) (*Server, error) {
	opts.setDefaults()
	if path == "" {
		return nil, errors.New("control socket path is empty")
	}
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("control socket path %s is %d bytes long; unix sockets allow at most %d", path, len(path), maxSocketPath)
	}
	pol := policy{self: uint32(os.Getuid())}
	if opts.Group != "" {
		gid, err := LookupGroup(opts.Group)
		var unknown user.UnknownGroupError
		if errors.As(err, &unknown) {
			return nil, fmt.Errorf("control group %q does not exist on this host: create it (groupadd %s), add the operators to it, and give the daemon the group (SupplementaryGroups=%s in the unit)", opts.Group, opts.Group, opts.Group)
		}
		if err != nil {
			return nil, fmt.Errorf("control group %q: %w", opts.Group, err)
		}
		pol.gid, pol.group = gid, opts.Group
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("control socket directory: %w", err)
	}
	lock, err := lockPath(path)
	if err != nil {
		return nil, err
	}
	ln, err := listenUnix(path)
	if err != nil {
		lock.Close()
		return nil, err
	}
	// The socket is created with the umask's mode; tighten it before any
	// client can have found it useful. The peer-credential check below
	// covers the short window in between.
	if err := os.Chmod(path, opts.Mode); err != nil {
		ln.Close()
		lock.Close()
		return nil, fmt.Errorf("control socket mode: %w", err)
	}
	if opts.Group != "" {
		if err := os.Chown(path, -1, int(pol.gid)); err != nil {
			ln.Close()
			lock.Close()
			return nil, fmt.Errorf("giving the control socket to group %s: %w (the daemon must run as root or be a member of the group)", opts.Group, err)
		}
	}

	s := &Server{
		path:   path,
		opts:   opts,
		log:    opts.Logger.With("control", path),
		pol:    pol,
		ln:     ln,
		lock:   lock,
		mux:    http.NewServeMux(),
		routes: make(map[string]map[string]http.Handler),
	}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	s.streams, s.cancelStreams = context.WithCancel(context.Background())
	s.srv = &http.Server{
		Handler: http.HandlerFunc(s.serveHTTP),
		// No ReadTimeout/WriteTimeout: a lock acquire may legitimately
		// block for as long as its client asked, and streams live for
		// hours. Each request carries its own deadline in its context.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return s.base },
		ConnContext:       s.connContext,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	// Unknown paths get a JSON 404 rather than the mux's text one.
	s.routes["/"] = map[string]http.Handler{}
	s.mux.Handle("/", s.dispatch("/"))
	return s, nil
}

// lockPath takes an exclusive, non-blocking flock next to the socket.
func lockPath(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("control socket lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &InUseError{Path: path}
		}
		return nil, fmt.Errorf("control socket lock %s.lock: %w", path, err)
	}
	return f, nil
}

// listenUnix listens on path, first removing a stale socket: one nobody
// answers on. Anything that is not a socket is left alone.
func listenUnix(path string) (*net.UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket; remove it or choose another --control path", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		switch {
		case err == nil:
			c.Close()
			return nil, &InUseError{Path: path}
		case errors.Is(err, syscall.ECONNREFUSED):
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("removing stale control socket: %w", err)
			}
		default:
			return nil, fmt.Errorf("checking existing control socket %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

// Path returns the socket's path.
func (s *Server) Path() string { return s.path }

// Handle registers h for method (GET, POST...) on pattern, a net/http
// ServeMux path pattern without method or host ("/v1/locks/{name}": read
// the wildcard with r.PathValue). It panics on a malformed or duplicate
// registration, like http.ServeMux.
func (s *Server) Handle(method, pattern string, h HandlerFunc) {
	s.register(method, pattern, s.plain(h))
}

// HandleStream registers a streaming handler; see StreamFunc.
func (s *Server) HandleStream(method, pattern string, h StreamFunc) {
	s.register(method, pattern, s.stream(h))
}

func (s *Server) register(method, pattern string, h http.Handler) {
	if method == "" || strings.ContainsAny(method, " /") {
		panic(fmt.Sprintf("ctl: bad method %q", method))
	}
	if !strings.HasPrefix(pattern, "/") || strings.Contains(pattern, " ") {
		panic(fmt.Sprintf("ctl: bad pattern %q: want a path like /v1/status", pattern))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	methods, ok := s.routes[pattern]
	if !ok {
		methods = make(map[string]http.Handler)
		s.routes[pattern] = methods
		s.mux.Handle(pattern, s.dispatch(pattern))
	}
	if _, dup := methods[method]; dup {
		panic(fmt.Sprintf("ctl: %s %s registered twice", method, pattern))
	}
	methods[method] = h
}

// dispatch picks the handler of a pattern by method, answering 404 for a
// pattern with no handlers (the catch-all) and 405 for a wrong method.
func (s *Server) dispatch(pattern string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.RLock()
		methods := s.routes[pattern]
		h := methods[r.Method]
		var allow []string
		if h == nil {
			for m := range methods {
				allow = append(allow, m)
			}
		}
		s.mu.RUnlock()
		switch {
		case h != nil:
			h.ServeHTTP(w, r)
		case len(allow) == 0:
			s.writeError(w, r, NotFound(fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)))
		default:
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.writeError(w, r, Errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
				"%s does not take %s (allowed: %s)", r.URL.Path, r.Method, strings.Join(allow, ", ")))
		}
	})
}

type peerErrKey struct{}

// connContext reads the peer's credentials once per connection.
func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	p, err := peerCredentials(c)
	if err != nil {
		return context.WithValue(ctx, peerErrKey{}, err)
	}
	return withPeer(ctx, p)
}

// serveHTTP applies the access check and the body limit, then routes.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := PeerOf(r)
	if !ok {
		err, _ := r.Context().Value(peerErrKey{}).(error)
		s.log.Warn("refused control request: peer credentials unknown", "err", err)
		s.writeError(w, r, Forbidden(fmt.Sprintf("cannot read the caller's credentials: %v", err)))
		return
	}
	if !s.pol.allowed(p) {
		s.log.Warn("refused control request", "uid", p.UID, "gid", p.GID, "pid", p.PID, "method", r.Method, "path", r.URL.Path)
		s.writeError(w, r, Forbidden(s.pol.refusal(p)))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	s.mux.ServeHTTP(w, r)
}

func (s *Server) plain(h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v any
		err := s.guard(r, func() error {
			var err error
			v, err = h(r)
			return err
		})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if v == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			s.writeError(w, r, Internal(fmt.Sprintf("encoding the answer to %s %s: %v", r.Method, r.URL.Path, err)))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(append(b, '\n'))
	})
}

func (s *Server) stream(h StreamFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clientCtx := r.Context()
		ctx, cancel := context.WithCancel(clientCtx)
		defer cancel()
		// Streams get no grace: Close ends them at once.
		defer context.AfterFunc(s.streams, cancel)()
		r = r.WithContext(ctx)
		rc := http.NewResponseController(w)

		var (
			mu      sync.Mutex
			started bool // the 200 and headers are out
			ended   bool // the handler returned: the response is being finished
		)
		send := func(v any) error {
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("ctl: encoding a stream object: %w", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if ended {
				return errStreamEnded
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if !started {
				w.Header().Set("Content-Type", "application/x-ndjson")
				w.Header().Set("Trailer", trailerError)
				// A stream's connection is not reused: its write deadline
				// would otherwise outlive it.
				w.Header().Set("Connection", "close")
				w.WriteHeader(http.StatusOK)
				started = true
			}
			rc.SetWriteDeadline(time.Now().Add(s.opts.StreamWriteTimeout))
			if _, err := w.Write(append(b, '\n')); err != nil {
				cancel()
				return err
			}
			if err := rc.Flush(); err != nil {
				cancel()
				return err
			}
			return nil
		}
		err := s.guard(r, func() error { return h(r, send) })
		if clientCtx.Err() == nil && s.streams.Err() != nil {
			// The client is still there: tell it why the stream ends.
			err = Unavailable("the daemon is shutting down")
		}

		mu.Lock()
		defer mu.Unlock()
		ended = true // a send from a goroutine the handler left behind must not write now
		switch {
		case clientCtx.Err() != nil:
			// Nobody to tell.
		case !started && err != nil:
			s.writeError(w, r, err)
		case !started:
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
		case err != nil:
			e := s.toError(err)
			b, _ := json.Marshal(errorBody{Error: e.Msg, Code: e.Code})
			w.Header().Set(trailerError, string(b))
		}
	})
}

// errStreamEnded is what send returns once its handler has returned.
var errStreamEnded = errors.New("ctl: stream already ended")

// guard runs a handler, turning a panic into a logged 500 so one broken
// endpoint does not drop the connection without a word.
func (s *Server) guard(r *http.Request, fn func() error) (err error) {
	defer func() {
		rec := recover()
		if rec == nil {
			return
		}
		if rec == http.ErrAbortHandler {
			panic(rec)
		}
		s.log.Error("control handler panicked", "method", r.Method, "path", r.URL.Path, "panic", rec, "stack", string(debug.Stack()))
		err = Internal(fmt.Sprintf("the daemon failed to answer %s %s: %v", r.Method, r.URL.Path, rec))
	}()
	return fn()
}

// errorBody is the wire form of an *Error.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func (s *Server) toError(err error) *Error {
	var e *Error
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &mbe):
		return tooLarge(mbe.Limit)
	case errors.Is(err, context.DeadlineExceeded):
		return Timeout(err.Error())
	case errors.Is(err, context.Canceled) && s.base.Err() != nil:
		return Unavailable("the daemon is shutting down")
	}
	return Internal(err.Error())
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := s.toError(err)
	b, _ := json.Marshal(errorBody{Error: e.Msg, Code: e.Code})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status)
	w.Write(append(b, '\n'))
}

func tooLarge(limit int64) *Error {
	return Errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "request body is larger than the %d bytes allowed", limit)
}

// Decode reads r's JSON body into v. Its errors are *Error values a handler
// returns as they are: 400 for an empty or malformed body, 413 for one over
// the server's limit.
func Decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return tooLarge(mbe.Limit)
		case errors.Is(err, io.EOF):
			return BadRequest("request body is empty: want a JSON object")
		}
		return BadRequest("request body is not valid: " + strings.TrimPrefix(err.Error(), "json: "))
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge(mbe.Limit)
		}
		return BadRequest("request body has data after its JSON value")
	}
	return nil
}

// Serve answers requests until Close; it then returns http.ErrServerClosed.
func (s *Server) Serve() error {
	return s.srv.Serve(rawListener{s.ln})
}

// Close stops the server: streams are cancelled at once, other in-flight
// requests get the grace period to finish and are then cancelled, the
// socket file is removed and the lock released. It is safe to call more
// than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.cancelStreams()
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.Grace)
		err := s.srv.Shutdown(ctx)
		cancel()
		if err != nil {
			// Grace is over: cancel what is still running and give the
			// handlers a moment to write their 503 before cutting them off.
			s.cancelBase()
			ctx, cancel := context.WithTimeout(context.Background(), s.opts.cutoff)
			if s.srv.Shutdown(ctx) != nil {
				s.srv.Close()
			}
			cancel()
		}
		s.cancelBase()
		// Serve may never have run; then the listener is still ours to close
		// (closing it removes the socket file).
		s.ln.Close()
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.closeErr = fmt.Errorf("removing control socket: %w", err)
		}
		s.lock.Close() // releases the flock
	})
	return s.closeErr
}
