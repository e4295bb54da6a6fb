package sdnotify_test

import (
	"fmt"
	"os"
	"strconv"

	"github.com/synclab/synclab/internal/sdnotify"
)

// Under a unit with WatchdogSec=10s systemd sets WATCHDOG_USEC and
// WATCHDOG_PID; the daemon pings from its loop at half the interval.
func ExampleWatchdogInterval() {
	os.Setenv("WATCHDOG_USEC", "10000000")
	os.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	defer os.Unsetenv("WATCHDOG_USEC")
	defer os.Unsetenv("WATCHDOG_PID")

	if iv, ok := sdnotify.WatchdogInterval(); ok {
		fmt.Println("ping every", iv/2)
	}
	// Output: ping every 5s
}

// Outside systemd (NOTIFY_SOCKET unset) notifications are a no-op, so the
// same binary runs in a terminal.
func ExampleReady() {
	os.Unsetenv("NOTIFY_SOCKET")
	sent, err := sdnotify.Ready()
	fmt.Println(sent, err)
	// Output: false <nil>
}
