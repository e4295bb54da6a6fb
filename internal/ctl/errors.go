package ctl

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"
)

// Error codes carried in the "code" member of an error response. Clients
// branch on the code, never on the message, which is for humans.
const (
	CodeBadRequest       = "bad_request"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeConflict         = "conflict"
	CodeTooLarge         = "too_large"
	CodeTimeout          = "timeout"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
)

// Error is a failure the daemon reports to a client. A handler returns one
// to choose the HTTP status and the code; any other error becomes a 500
// "internal". On the wire it is the body
//
//	{"error": "lock \"db\" is held by node 3", "code": "conflict"}
//
// and the client turns that body back into an *Error with the response's
// status, so callers on both sides use the same type.
type Error struct {
	Status int    // HTTP status, e.g. http.StatusConflict
	Code   string // machine-readable, one of the Code* constants or a handler's own
	Msg    string // for humans; printed by the CLI as it is
}

func (e *Error) Error() string { return e.Msg }

// Is makes errors.Is(err, ErrPermission) true for a 403 from the daemon, so
// a CLI treats "the socket refused me" alike whichever side noticed.
func (e *Error) Is(target error) bool {
	return target == ErrPermission && e.Status == http.StatusForbidden
}

// Errorf builds an *Error with any status and code.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// BadRequest: the request is malformed or its arguments are invalid (400).
func BadRequest(msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeBadRequest, Msg: msg}
}

// Forbidden: the caller may not do this (403).
func Forbidden(msg string) *Error {
	return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Msg: msg}
}

// NotFound: the named thing (lock, member, route) does not exist (404).
func NotFound(msg string) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Msg: msg}
}

// Conflict: the request is valid but the state forbids it now, e.g. a lock
// held by someone else (409).
func Conflict(msg string) *Error {
	return &Error{Status: http.StatusConflict, Code: CodeConflict, Msg: msg}
}

// Timeout: the operation did not complete within the time the caller
// allowed, e.g. a lock acquire (504).
func Timeout(msg string) *Error {
	return &Error{Status: http.StatusGatewayTimeout, Code: CodeTimeout, Msg: msg}
}

// Unavailable: the daemon cannot answer now (starting, stopping, no
// quorum) (503).
func Unavailable(msg string) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Msg: msg}
}

// Internal: a bug or an unexpected failure inside the daemon (500).
func Internal(msg string) *Error {
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Msg: msg}
}

// ErrUnreachable matches (errors.Is) a client error raised because no daemon
// answers on the socket: it does not exist, nobody listens on it, or the
// daemon went away mid-request. CLIs exit 1 on it with the message as is.
var ErrUnreachable = errors.New("ctl: daemon unreachable")

// ErrPermission matches (errors.Is) a client error raised because the caller
// may not use the socket: the file system said so (EACCES) or the daemon's
// peer-credential check did (403).
var ErrPermission = errors.New("ctl: permission denied")

// ConnectError is a client's failure to talk to the daemon at all. Its
// message names the socket, the reason, and what to do about it.
type ConnectError struct {
	Path   string // the control socket
	Daemon string // the daemon's name ("timed"), for the advice; may be empty
	Op     string // "connect" or "read": where it failed
	Err    error  // the underlying error (a *net.OpError, a syscall.Errno...)
}

// Unwrap returns the underlying error.
func (e *ConnectError) Unwrap() error { return e.Err }

// Is reports ErrPermission for EACCES/EPERM, ErrUnreachable otherwise.
func (e *ConnectError) Is(target error) bool {
	switch target {
	case ErrPermission:
		return e.permission()
	case ErrUnreachable:
		return !e.permission()
	}
	return false
}

func (e *ConnectError) permission() bool {
	return errors.Is(e.Err, syscall.EACCES) || errors.Is(e.Err, syscall.EPERM)
}

func (e *ConnectError) Error() string {
	if e.permission() {
		return fmt.Sprintf("permission denied on the control socket %s: run as root or as a member of %s",
			e.Path, e.groupHint())
	}
	var reason string
	switch {
	case errors.Is(e.Err, syscall.ENOENT):
		reason = "no such socket"
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		reason = "nobody is listening (a stale socket)"
	case errors.Is(e.Err, syscall.ENOTSOCK), errors.Is(e.Err, syscall.ENOTDIR):
		reason = "not a socket"
	case e.Op == "read":
		reason = fmt.Sprintf("the daemon closed the connection (%s)", rootCause(e.Err))
	default:
		reason = rootCause(e.Err)
	}
	run := "the daemon"
	if e.Daemon != "" {
		run = fmt.Sprintf("%q", e.Daemon+" run")
	}
	return fmt.Sprintf("cannot reach the daemon at %s: %s (is %s running? use --control PATH to pick another daemon)",
		e.Path, reason, run)
}

// groupHint names the group the daemon admits: the --control-group flag and
// its environment variable when the daemon is known.
func (e *ConnectError) groupHint() string {
	if e.Daemon == "" {
		return "the daemon's control group (its --control-group flag)"
	}
	env := strings.ToUpper(strings.ReplaceAll(e.Daemon, "-", "_")) + "_CONTROL_GROUP"
	return fmt.Sprintf("the group named by %q (%s)", e.Daemon+" run --control-group", env)
}

// rootCause strips the net package's "dial unix /path:" prefixes, which
// would repeat the path the message already names.
func rootCause(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// ErrInUse matches (errors.Is) the error Listen returns when another
// daemon already serves the socket.
var ErrInUse = errors.New("ctl: control socket in use")

// InUseError is Listen's refusal to take over a socket a live daemon serves.
type InUseError struct {
	Path string
}

func (e *InUseError) Error() string { return "another daemon is already serving " + e.Path }

// Is reports ErrInUse.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }
