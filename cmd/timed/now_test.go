package main

import "testing"

// TestDefaultTruetimePath: the page sits beside the control socket, named
// after it unless it is the default control.sock, so that daemons sharing
// a directory (tests, a lab on one machine) each have their own.
func TestDefaultTruetimePath(t *testing.T) {
	for control, want := range map[string]string{
		"/run/timed/control.sock": "/run/timed/truetime",
		"/tmp/x/h2.sock":          "/tmp/x/h2.truetime",
		"/tmp/x/ctl":              "/tmp/x/ctl.truetime",
	} {
		if got := defaultTruetimePath(control); got != want {
			t.Errorf("beside %s: %s, want %s", control, got, want)
		}
	}
}
