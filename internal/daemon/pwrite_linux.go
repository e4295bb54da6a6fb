//go:build linux && !(386 || arm || mips || mipsle)

package daemon

// pwriteOffset is pwrite64(2)'s offset as the last three arguments of the
// system call: one register on a 64-bit kernel.
func pwriteOffset(off int64) [3]uintptr { return [3]uintptr{uintptr(off), 0, 0} }
