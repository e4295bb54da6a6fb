package daemon

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"

	"golang.org/x/sys/unix"
)

// releasePages unmaps the resident pages of the executable's read-only
// mappings (code, read-only data, the function tables) with MADV_DONTNEED.
// They are never written, so nothing is lost: the next use of a page maps
// it again from the page cache (with its neighbours: the kernel maps up to
// 64 KB around a faulting page that is in the cache). The writable
// mappings (Go's data and bss) are left alone: for a private mapping
// MADV_DONTNEED would throw their contents away. The daemon calls it when
// its start-up is over, again once it has settled and after its resident
// set grew (releaseLater); each release is counted (status: memory).
func releasePages() error {
	// Collect first (and give the start-up garbage back to the kernel):
	// a collection walks the live heap's types and the stacks' function
	// tables, so one after the unmapping would bring their pages back.
	debug.FreeOSMemory()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// "START-END PERMS OFFSET DEV INODE PATH"
		f := bytes.Fields(sc.Bytes())
		// (The path may hold spaces: a replaced binary's is "PATH (deleted)",
		// as /proc/self/exe reads then too.)
		if len(f) < 6 || string(bytes.Join(f[5:], []byte(" "))) != exe || len(f[1]) < 2 || f[1][1] != '-' {
			continue // another file, anonymous, or writable
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			return fmt.Errorf("unreadable line in /proc/self/maps: %q", sc.Text())
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED); e != 0 {
			return fmt.Errorf("madvise %s: %w", f[0], e)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	pageReleases.Add(1)
	return nil
}

// readSmall reads what fits of the file at path into buf with raw system
// calls (open, read, close), as releaseLater's check does every 10 s.
func readSmall(path string, buf []byte) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return unix.Read(fd, buf)
}
