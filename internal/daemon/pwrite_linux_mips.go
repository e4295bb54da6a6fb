package daemon

// pwriteOffset is pwrite64(2)'s offset as the last three arguments of the
// system call: MIPS o32 passes a 64-bit argument in an even register
// pair, so the fourth argument is padding, and big-endian mips puts the
// high word first (golang.org/x/sys/unix's zsyscall_linux_mips.go does the
// same).
func pwriteOffset(off int64) [3]uintptr { return [3]uintptr{0, uintptr(off >> 32), uintptr(off)} }
