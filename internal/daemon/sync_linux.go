package daemon

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes f's data durable: fdatasync(2), which skips the inode's
// timestamps (an append log's size change is still written).
func syncData(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
