package app

import (
	"os"
	"runtime"
)

// SerialRuntime gives the Go runtime one P unless GOMAXPROCS is set in the
// environment. A daemon whose work is serial (one loop steps the core, or
// one reader under the loop's lock) gains nothing from a second P, and pays
// for it on every datagram: the scheduler wakes a spare thread to look for
// work after each one the netpoller hands over. timed's NTP replies/s rose
// by 10-30% with one P (bench.sh ntpserve); an idle 3-member electd spent
// about a fifth less CPU (0.65/0.65/1.60% of a core per member -> 0.55/
// 0.45/1.25%, 50 ms heartbeats, 20 s on loopback).
func SerialRuntime() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}
