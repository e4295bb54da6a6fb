//go:build unix

package truetime

import (
	"fmt"
	"os"
	"syscall"
)

// fileID tells one file from another at the same path.
type fileID struct{ dev, ino uint64 }

func idOf(fi os.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{uint64(st.Dev), uint64(st.Ino)}
	}
	return fileID{}
}

// mapFile maps the page at path read-only.
func mapFile(path string) (*mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("truetime: %w (is timed running, publishing there? timed run --truetime-file; readers need to be root or in its --control-group)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("truetime: %w", err)
	}
	if fi.Size() < PageSize {
		return nil, &Error{Kind: ErrVersion, Path: path, Detail: fmt.Sprintf("%d bytes, not a %d-byte page", fi.Size(), PageSize)}
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, PageSize, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("truetime: mapping %s: %w", path, err)
	}
	return &mapping{p: pageOf(b), unmap: func() error { return syscall.Munmap(b) }, id: idOf(fi), made: fi.ModTime().UnixNano()}, nil
}

// mapWritable opens (creating it if need be), locks and maps the page at
// path for the publisher; see Create. The lock (flock) is held until the
// mapping is unmapped.
func mapWritable(path string, gid int) (m *mapping, fresh bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return nil, false, err
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	// One writer: the lock lives as long as the descriptor, which the
	// mapping keeps.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return nil, false, fmt.Errorf("another timed publishes there (the file is locked: %w): give each daemon its own --truetime-file", err)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is not a regular file", path)
	}
	// The umask (the unit's 0077) must not take the group's read away.
	if err := f.Chmod(0o640); err != nil {
		return nil, false, err
	}
	if gid >= 0 {
		if err := f.Chown(-1, gid); err != nil {
			return nil, false, fmt.Errorf("giving %s to the control group: %w (the daemon must run as root or be a member of the group)", path, err)
		}
	}
	if fi.Size() != PageSize {
		fresh = true
		if err := f.Truncate(0); err != nil {
			return nil, false, err
		}
		if err := f.Truncate(PageSize); err != nil {
			return nil, false, err
		}
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, PageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, false, fmt.Errorf("mapping %s: %w", path, err)
	}
	keep = true
	unmap := func() error {
		err := syscall.Munmap(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return &mapping{p: pageOf(b), unmap: unmap, id: idOf(fi)}, fresh, nil
}
