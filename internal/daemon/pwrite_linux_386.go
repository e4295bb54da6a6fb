package daemon

// pwriteOffset is pwrite64(2)'s offset as the last three arguments of the
// system call: on 386 two registers, the low word first
// (golang.org/x/sys/unix's zsyscall_linux_386.go does the same).
func pwriteOffset(off int64) [3]uintptr { return [3]uintptr{uintptr(off), uintptr(off >> 32), 0} }
