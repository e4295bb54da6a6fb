// Package rawsock gives a stream socket reads and writes that do not wake
// the Go runtime's monitor thread.
//
// net.Conn's Read and Write enter the Go scheduler's syscall state, and
// entering it wakes the runtime's monitor thread (sysmon) whenever that
// thread sleeps, which it does whenever the process was idle. A daemon
// woken by one control call or one frame then woke a second thread, which
// went on polling every 20 µs until the daemon idled again: on mutexd,
// 4.1 nanosleeps and 4.2 futex calls per contended grant, 78% of the
// monitor's wake-ups coming from the member links' reads and 22% from the
// control socket (perf, uprobe on runtime.entersyscallWakeSysmon). A read
// or write with MSG_DONTWAIT never blocks, so it needs no syscall state:
// Conn makes them raw system calls and parks in Go's network poller only
// when the socket has nothing to read or no room to write, exactly where
// net.Conn parks, so deadlines and Close work as they do there. The UDP
// member sockets' batched reads and writes are raw the same way
// (internal/transport); their stamped sends and error-queue reads are not.
package rawsock
