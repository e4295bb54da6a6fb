//go:build !linux

package daemon

// releaseStartupPages is Linux only.
func releaseStartupPages() error { return nil }
