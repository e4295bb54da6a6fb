package truetime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/synclab/synclab/pkg/truetime"
)

// A program reads the bound timed publishes, and waits out a commit
// timestamp. Here the test publishes the page itself (timed does it in a
// running system, at truetime.DefaultPath): the true time within ±1 ms of
// this clock.
func Example() {
	dir, _ := os.MkdirTemp("", "truetime")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "truetime")
	pub, err := truetime.Create(path, -1)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pub.Close()
	now := time.Now()
	pub.Publish(truetime.Publication{Base: now, Earliest: now.Add(-time.Millisecond), Latest: now.Add(time.Millisecond),
		GrowthPPB: 15000, StaleAfter: 10 * time.Second, Interval: time.Second, Flags: truetime.FlagSynchronised})

	tt, err := truetime.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tt.Close()
	earliest, latest, err := tt.Now()
	if errors.Is(err, truetime.ErrUnsynchronised) {
		fmt.Println("no bound yet:", err)
		return
	}
	fmt.Println("the true time lies within", latest.Sub(earliest).Round(time.Millisecond))
	// Commit-wait: once WaitUntilPast returns, latest is in the past
	// everywhere, by any clock within its bound.
	if err := tt.WaitUntilPast(context.Background(), latest); err != nil {
		fmt.Println(err)
		return
	}
	earliest, _, _ = tt.Now()
	fmt.Println("latest is past:", earliest.After(latest))
	// Output:
	// the true time lies within 2ms
	// latest is past: true
}
