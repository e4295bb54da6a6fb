//go:build linux

package labnet

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// inNamespace runs fn on an OS thread that has joined the network namespace
// mounted at path (as /run/netns/NAME is). A network namespace belongs to a
// thread, not to the process, so fn runs on a fresh goroutine locked to its
// thread; that goroutine ends without unlocking, which makes the runtime
// discard the thread instead of handing a thread in the wrong namespace to
// unrelated goroutines. Sockets opened by fn stay in the namespace for their
// whole life; goroutines fn starts do not inherit it.
func inNamespace(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: see above.
		f, err := os.Open(path)
		if err != nil {
			errc <- fmt.Errorf("labnet: open namespace: %w", err)
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
		if err != nil {
			errc <- fmt.Errorf("labnet: setns %s: %w", path, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// writeSysctls writes {path, value} pairs (paths relative to /proc/sys)
// inside the network namespace at path. /proc/sys/net
// resolves against the calling thread's namespace, which is why this goes
// through inNamespace rather than through `ip netns exec sysctl` (6 ms per
// process on the lab machines).
func writeSysctls(path string, kv [][2]string) error {
	return inNamespace(path, func() error {
		for _, p := range kv {
			file := "/proc/sys/" + p[0]
			if err := os.WriteFile(file, []byte(p[1]), 0); err != nil {
				return fmt.Errorf("labnet: sysctl %s=%s: %w", p[0], p[1], err)
			}
		}
		return nil
	})
}

// spawner is one goroutine locked to its OS thread for the life of the
// process, from which every lab process is forked. Children get
// PR_SET_PDEATHSIG=SIGKILL so that a test binary killed by `go test -timeout`
// does not leave daemons running in orphaned namespaces. The kernel sends that
// signal when the forking *thread* exits, and the Go runtime ends threads
// whenever a goroutine exits while locked (inNamespace does that on purpose);
// forking from a thread that never exits makes the signal mean "the test
// binary died" and nothing else (golang/go#27505).
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	errc chan error
}

func startProcess(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: this thread must outlive every child
			for r := range spawner.reqs {
				r.errc <- r.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	r := spawnReq{cmd: cmd, errc: make(chan error, 1)}
	spawner.reqs <- r
	return <-r.errc
}

// namespacePIDs returns the processes whose network namespace is the one
// mounted at path: the lab's own processes and anything they forked. Entries
// of /proc that vanish or cannot be read are skipped.
func namespacePIDs(path string) ([]int, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, err
	}
	want := fmt.Sprintf("net:[%d]", st.Ino)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		link, err := os.Readlink("/proc/" + e.Name() + "/ns/net")
		if err == nil && link == want {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// netnsInode returns the identity of a network namespace: the inode of its
// nsfs file, as /proc/PID/ns/net shows it ("net:[INODE]").
func netnsInode(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}
