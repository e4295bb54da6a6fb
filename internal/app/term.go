//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package app

import "golang.org/x/sys/unix"

// IsTerminal says whether fd is a terminal: human output may then use
// escape codes (bold), never in a file or a pipe.
func IsTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	return err == nil
}
