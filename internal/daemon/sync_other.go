//go:build !linux

package daemon

import "os"

// syncData makes f's data durable: fsync where fdatasync is not offered.
func syncData(f *os.File) error { return f.Sync() }

// writeData writes b at off in f.
func writeData(f *os.File, b []byte, off int64) (written int, err error) {
	return f.WriteAt(b, off)
}

// preallocate extends f to off+n (zeros, sparse where the file system
// allows): writes into the extension do not change the file's size.
func preallocate(f *os.File, off, n int64) error {
	if fi, err := f.Stat(); err != nil || fi.Size() >= off+n {
		return err
	}
	return f.Truncate(off + n)
}
