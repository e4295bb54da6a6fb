//go:build linux && (arm || mipsle)

package daemon

// pwriteOffset is pwrite64(2)'s offset as the last three arguments of the
// system call: the ARM EABI and MIPS o32 pass a 64-bit argument in an
// even register pair, so the fourth argument is padding, and these
// little-endian ones put the low word first (golang.org/x/sys/unix's
// zsyscall_linux_arm.go and _mipsle.go do the same).
func pwriteOffset(off int64) [3]uintptr { return [3]uintptr{0, uintptr(off), uintptr(off >> 32)} }
