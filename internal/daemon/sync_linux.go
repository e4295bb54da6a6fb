package daemon

import (
	"errors"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// syncData makes f's data durable: fdatasync(2), which skips the inode's
// timestamps (a file's size change is still written).
//
// It is a raw system call: the goroutine keeps its P (the runtime's
// right to run Go code) while the disk works. The loop is the one that
// waits for the disk, and with the daemons' one P (app.SerialRuntime)
// an ordinary system call lets the runtime hand the P to another thread
// after 20 us and makes the loop take it back after the disk answered:
// thread wake-ups on the path of every message that waits for the
// write. Holding it, nothing else in the daemon runs during the
// fdatasync (the loop holds its lock for it anyway), and a garbage
// collection waits for it to end.
//
// perf stat on the bench's members (bench.test -order, load 18-19): 5.4
// futex calls per fdatasync with the ordinary system call, 1.6 with this
// one, and a quarter less CPU per multicast.
func syncData(f *os.File) error {
	fd := f.Fd()
	for {
		_, _, e := unix.RawSyscall(unix.SYS_FDATASYNC, fd, 0, 0)
		switch e {
		case 0:
			return nil
		case unix.EINTR: // the runtime's preemption signal, on a long sync
			continue
		}
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: e}
	}
}

// writeData writes b at off in f: pwrite(2) as a raw system call, for
// the reason syncData is one. os.File.WriteAt enters the scheduler's
// syscall state, and a daemon whose every P was idle until the frame
// that brought the record (a member between two multicasts) wakes the
// runtime's monitor thread there, which then polls every 20 us for a
// millisecond or more: perf record on a bench member (bench.test -order,
// 2026-12-06) put 20% of its CPU in the monitor's usleep, every wake-up
// of it from this write. A pwrite of a record into a preallocated file
// goes to the page cache and does not wait for the disk (the fdatasync
// after it does); EINTR is retried, a short write continued.
//
// written is how many bytes of b were written, failed or not.
func writeData(f *os.File, b []byte, off int64) (written int, err error) {
	fd := f.Fd()
	for len(b) > 0 {
		o := pwriteOffset(off) // one register, or two on a 32-bit kernel
		n, _, e := unix.RawSyscall6(unix.SYS_PWRITE64, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), o[0], o[1], o[2])
		switch {
		case e == unix.EINTR:
			continue
		case e != 0:
			return written, &os.PathError{Op: "pwrite", Path: f.Name(), Err: e}
		case n == 0:
			return written, &os.PathError{Op: "pwrite", Path: f.Name(), Err: io.ErrShortWrite}
		}
		b, off, written = b[n:], off+int64(n), written+int(n)
	}
	return written, nil
}

// preallocate gives f the space [off, off+n) and makes it part of the
// file (reading as zeros), so that writes into it do not change the
// file's size: an fdatasync then has no size to commit through the
// file system's journal (ext4: 265 against 470 us p50 on the lab's
// disk). A file system without fallocate(2) gets a sparse extension,
// which at least keeps the size still.
func preallocate(f *os.File, off, n int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return f.Truncate(off + n)
	}
	return err
}
