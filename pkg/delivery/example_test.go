package delivery_test

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/delivery"
)

// A master sends a correction to member 2, resends it once, and gives up.
func Example() {
	out, _ := delivery.NewOutbox[string](delivery.Config{Retry: 100 * time.Millisecond, Tries: 2})
	now := time.Unix(0, 0)
	out.Send(now, delivery.Key{To: 2, ID: 1}, "correction -3ms") // and send it now

	now = out.Deadline()
	resend, _ := out.Tick(now)
	fmt.Println("resend:", resend[0].Msg, "try", resend[0].Tries)

	now = out.Deadline()
	_, gaveUp := out.Tick(now)
	fmt.Println(gaveUp[0].Key, gaveUp[0].Outcome)

	in, _ := delivery.NewFilter(0)
	fmt.Println(in.Check(1, 1, 7), in.Check(1, 1, 7))
	// Output:
	// resend: correction -3ms try 2
	// 2/1 gave_up
	// new duplicate
}
