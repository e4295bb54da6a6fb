package daemon

import (
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fdTimer is the run loop's timer on Linux: a timerfd(2) in the runtime's
// poller instead of a Go timer, for what an idle daemon costs.
//
// Go's runtime keeps a monitor thread (sysmon) that, while every P is idle,
// sleeps until the next Go timer is due and then polls for about 10 ms
// before it sleeps again: two thread wake-ups per timer on top of the
// thread that runs it. The loop's timer is the one Go timer of an idle
// daemon, due at every heartbeat (electd's and orderd's every 50 ms), so
// the monitor woke with every heartbeat. A timerfd is a file the poller
// waits on like the sockets: the thread that wakes for it is the one that
// wakes for a frame, and the monitor, with no Go timer to wait for, sleeps
// (docs/benchmarks/2026-12-06-idle.md measures both).
//
// Every call on the timerfd is a raw syscall: none of them blocks, and one
// through the scheduler's syscall path would wake the monitor anyway.
type fdTimer struct {
	f  *os.File
	rc syscall.RawConn
	fd uintptr
	c  chan time.Time

	// mu orders a firing's delivery against Reset and Stop: the reader
	// delivers a firing only while the timer is disarmed (so not re-armed
	// since it fired), and Reset drains what was delivered before it, so
	// that after Reset no earlier firing is received (as time.Timer).
	mu      sync.Mutex
	stopped bool
}

// newLoopTimer makes the loop's timer, armed for d: a timerfd, or a Go
// timer if the kernel refuses one (the loop works the same, at the cost
// of the monitor's wake-ups).
func newLoopTimer(d time.Duration) loopTimer {
	t, err := newFDTimer(d)
	if err != nil {
		return newRealTimer(d)
	}
	return t
}

func newFDTimer(d time.Duration) (*fdTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	// A non-blocking descriptor: os.NewFile adds it to the poller.
	f := os.NewFile(uintptr(fd), "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	t := &fdTimer{f: f, rc: rc, fd: uintptr(fd), c: make(chan time.Time, 1)}
	if err := t.set(d); err != nil {
		f.Close()
		return nil, err
	}
	go t.read()
	return t, nil
}

func (t *fdTimer) Chan() <-chan time.Time { return t.c }

// Reset arms the timer for d from now (at once if d <= 0) and drops a
// firing not yet received. It reports whether the timer was armed.
func (t *fdTimer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	was := t.armed()
	t.set(d)
	t.drain()
	return was
}

// Stop disarms the timer for good and closes it; the loop's timer is
// stopped only when the loop ends.
func (t *fdTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	t.stopped = true
	was := t.armed()
	t.drain()
	t.f.Close() // the reader's wait ends with an error
	return was
}

func (t *fdTimer) drain() {
	select {
	case <-t.c:
	default:
	}
}

// read waits for the timerfd's expirations and delivers each, until the
// timer is closed.
func (t *fdTimer) read() {
	var n [8]byte
	for {
		var rerr syscall.Errno
		err := t.rc.Read(func(fd uintptr) bool {
			_, _, rerr = unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&n[0])), 8)
			return rerr != unix.EAGAIN
		})
		if err != nil {
			return // closed
		}
		if rerr != 0 {
			if rerr == unix.EINTR {
				continue
			}
			return
		}
		now := time.Now()
		t.mu.Lock()
		// Armed again since it fired: Reset's arming is what counts.
		if !t.stopped && !t.armed() {
			select {
			case t.c <- now:
			default: // one firing waiting is enough
			}
		}
		t.mu.Unlock()
	}
}

// set arms the timerfd once, d from now; the kernel's smallest delay for d
// <= 0 (an it_value of zero would disarm it).
func (t *fdTimer) set(d time.Duration) error {
	d = max(d, 1)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if _, _, e := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, t.fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// armed reports whether the timerfd is armed and not yet expired.
func (t *fdTimer) armed() bool {
	var spec unix.ItimerSpec
	if _, _, e := unix.RawSyscall(unix.SYS_TIMERFD_GETTIME, t.fd, uintptr(unsafe.Pointer(&spec)), 0); e != 0 {
		return false
	}
	return spec.Value.Sec != 0 || spec.Value.Nsec != 0
}
