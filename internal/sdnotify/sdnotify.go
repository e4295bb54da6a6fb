package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// sendTimeout bounds one notification. A datagram to a unix socket blocks
// when the receiver's queue is full; a daemon must not hang on a wedged
// service manager.
const sendTimeout = 2 * time.Second

// ErrBadAddress is returned (wrapped) for a NOTIFY_SOCKET this package
// cannot use: neither an absolute path nor an abstract '@' name.
var ErrBadAddress = errors.New("sdnotify: unsupported NOTIFY_SOCKET address")

// Notify sends state (newline-separated VAR=value assignments, see
// sd_notify(3)) to the service manager. It reports sent=false, err=nil when
// NOTIFY_SOCKET is unset: the process is not run by systemd with
// Type=notify, and there is nobody to tell.
func Notify(state string) (sent bool, err error) {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return false, nil
	}
	if err := send(addr, state); err != nil {
		return false, err
	}
	return true, nil
}

// send writes one datagram to addr. A leading '@' names a socket in the
// abstract namespace; Go's net package turns it into the leading NUL byte
// the kernel expects.
func send(addr, state string) error {
	if !strings.HasPrefix(addr, "/") && !strings.HasPrefix(addr, "@") {
		// systemd also knows vsock: addresses (for VMs); synclab runs on
		// the host, so refuse loudly rather than guess.
		return fmt.Errorf("%w: %q (want an absolute path or @name)", ErrBadAddress, addr)
	}
	if len(addr) < 2 {
		return fmt.Errorf("%w: %q", ErrBadAddress, addr)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	defer conn.Close()
	if err := conn.SetWriteDeadline(time.Now().Add(sendTimeout)); err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	return nil
}

// Ready tells the service manager that start-up is finished (READY=1):
// systemd then starts the units ordered after this one.
func Ready() (bool, error) { return Notify("READY=1") }

// Stopping tells the service manager that the daemon is shutting down
// (STOPPING=1), so a slow shutdown is not mistaken for a hang.
func Stopping() (bool, error) { return Notify("STOPPING=1") }

// Watchdog pets the service manager's watchdog (WATCHDOG=1). Call it from
// the daemon's main loop, not from a goroutine of its own: a hung loop must
// stop the pings so systemd restarts the daemon.
func Watchdog() (bool, error) { return Notify("WATCHDOG=1") }

// Status sets the free-form status line `systemctl status` shows. A newline
// would end the assignment early and start a bogus one, so newlines in msg
// become spaces.
func Status(msg string) (bool, error) {
	return Notify("STATUS=" + strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(msg))
}

// WatchdogInterval returns the watchdog timeout systemd enforces on this
// process (WATCHDOG_USEC, set from the unit's WatchdogSec=), and whether it
// is enabled. When WATCHDOG_PID is set it must be this process's PID: the
// variables may have been inherited by a child that is not the service's
// main process. Ping at half the interval or more often.
func WatchdogInterval() (time.Duration, bool) {
	return watchdogInterval(os.Getenv("WATCHDOG_USEC"), os.Getenv("WATCHDOG_PID"), os.Getpid())
}

func watchdogInterval(usec, pid string, self int) (time.Duration, bool) {
	if usec == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(usec, 10, 64)
	if err != nil || n == 0 || n > uint64(1<<63-1)/uint64(time.Microsecond) {
		return 0, false
	}
	if pid != "" {
		p, err := strconv.Atoi(pid)
		if err != nil || p != self {
			return 0, false
		}
	}
	return time.Duration(n) * time.Microsecond, true
}
