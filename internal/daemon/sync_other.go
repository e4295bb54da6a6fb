//go:build !linux

package daemon

import "os"

// syncData makes f's data durable: fsync where fdatasync is not offered.
func syncData(f *os.File) error { return f.Sync() }
