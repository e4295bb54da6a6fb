package labnet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// ErrWaitTimeout is returned by Proc.Wait when the process is still running
// at the deadline.
var ErrWaitTimeout = errors.New("labnet: process still running")

// killWait bounds how long Kill waits for the kernel to reap a SIGKILLed
// process. SIGKILL cannot be caught, so only a process stuck in the kernel
// (uninterruptible sleep) takes longer; that is worth an error, not a hang.
const killWait = 10 * time.Second

// outputTail is how much of a process's output a failing test logs.
const outputTail = 64 << 10

// Proc is a process running inside a host's namespace, started by
// Host.Start.
type Proc struct {
	host *Host
	name string
	cmd  *exec.Cmd
	log  string

	done  chan struct{}    // closed once the process has been reaped
	state *os.ProcessState // valid after done is closed
	err   error            // error from Wait other than an exit status
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// Start runs argv inside the host's namespace (through `ip netns exec`, which
// execs argv in place, so PID is the program's own). env is added to the
// test binary's environment. stdout and stderr go to one file in the lab's
// directory; if t has failed by the time its cleanup runs, the end of that
// output is written to the test log. That cleanup also kills the process if it
// is still running, and so does the lab's teardown.
//
// A process is also killed if the test binary dies without running its
// cleanups (a `go test -timeout` panic): it gets SIGKILL from the kernel when
// its parent goes away.
func (h *Host) Start(t testing.TB, name string, argv []string, env []string) *Proc {
	t.Helper()
	if len(argv) == 0 {
		t.Fatalf("labnet: %s.Start(%q): empty command", h.Name(), name)
	}
	l := h.lab
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		t.Fatalf("labnet: %s.Start(%q): lab %s is torn down", h.Name(), name, l.prefix)
	}
	l.seq++
	logPath := filepath.Join(l.dir, fmt.Sprintf("%03d-%s-%s.log", l.seq, h.Name(), unsafeName.ReplaceAllString(name, "_")))
	l.mu.Unlock()

	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("labnet: %s.Start(%q): %v", h.Name(), name, err)
	}
	defer f.Close() // the child holds its own copy
	cmd := exec.Command("ip", append([]string{"netns", "exec", h.ns}, argv...)...)
	cmd.Stdout, cmd.Stderr = f, f // *os.File: the child writes directly, no copying goroutine
	// SYNCLAB_LAB_FILE= first: a lab test's daemons never read this
	// machine's own lab file (/etc/synclab/lab.toml); env or a
	// --lab-file flag names one.
	cmd.Env = append(append(os.Environ(), "SYNCLAB_LAB_FILE="), env...)
	if err := startProcess(cmd); err != nil {
		t.Fatalf("labnet: %s.Start(%q) %v: %v", h.Name(), name, argv, err)
	}
	p := &Proc{host: h, name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go p.reap()

	l.mu.Lock()
	l.procs = append(l.procs, p)
	l.mu.Unlock()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("labnet: output of %s on %s (pid %d, %s):\n%s", p.name, h.Name(), p.PID(), p.log, tail(p.Output(), outputTail))
		}
	})
	return p
}

func (p *Proc) reap() {
	err := p.cmd.Wait()
	p.state = p.cmd.ProcessState
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		p.err = err
	}
	close(p.done)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}

// PID is the program's process ID (not that of a wrapper: `ip netns exec`
// execs the program in place).
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Name is the name given to Start.
func (p *Proc) Name() string { return p.name }

// Host is the host the process runs on.
func (p *Proc) Host() *Host { return p.host }

// LogPath is the file holding the process's stdout and stderr.
func (p *Proc) LogPath() string { return p.log }

// Output returns everything the process has written to stdout and stderr so
// far.
func (p *Proc) Output() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.log, err)
	}
	return string(b)
}

// Signal sends sig to the process. It returns os.ErrProcessDone if the
// process has already been reaped (the PID may belong to another process by
// then, which is why this never signals a bare PID).
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Stop freezes the process (SIGSTOP): it keeps its sockets but neither reads
// nor sends, like a host that hangs.
func (p *Proc) Stop() error { return p.Signal(syscall.SIGSTOP) }

// Cont resumes a stopped process (SIGCONT).
func (p *Proc) Cont() error { return p.Signal(syscall.SIGCONT) }

// Kill sends SIGKILL and returns once the process has been reaped, so a
// restarted program can bind the same ports right away. Killing a process
// that has already exited is not an error.
func (p *Proc) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("labnet: kill %s (pid %d): %w", p.name, p.PID(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("labnet: %s (pid %d) not reaped %v after SIGKILL", p.name, p.PID(), killWait)
	}
}

// kill is Kill for cleanups: a stopped process dies of SIGKILL as well, so
// there is nothing to do on error but move on.
func (p *Proc) kill() { _ = p.Kill() }

// Exited reports whether the process has ended and been reaped.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
	}
	return false
}

// Wait waits up to timeout for the process to end and returns its exit
// code; a process ended by a signal gives 128+signal, as in a shell (137 for
// SIGKILL). At the timeout it returns ErrWaitTimeout and leaves the process
// running. Wait may be called any number of times.
func (p *Proc) Wait(timeout time.Duration) (int, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		return 0, ErrWaitTimeout
	}
	if p.err != nil {
		return -1, fmt.Errorf("labnet: wait %s (pid %d): %w", p.name, p.PID(), p.err)
	}
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return p.state.ExitCode(), nil
}
