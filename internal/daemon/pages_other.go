//go:build !linux

package daemon

import "errors"

// releasePages is Linux only.
func releasePages() error { return nil }

// readSmall is Linux only (there is no /proc elsewhere).
func readSmall(string, []byte) (int, error) { return 0, errNoProc }

var errNoProc = errors.New("no /proc on this system")
