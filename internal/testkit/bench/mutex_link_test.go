package bench

import (
	"testing"
	"time"
)

// TestLinkVerdict judges link-cut trials recorded on the lab
// (BenchmarkMutex -mutex.algorithm central -mutex.keep DIR, 2026-12-06
// 14:45, the daemons' traces in DIR) and variations of them. Trial 4 is
// the one every run counted as "two holders": h4 held, h5 waited and
// coordinated, so the cut link was the holder's to its coordinator. The
// coordinator had granted h4's lease cut to 2652 ms (its support was
// 0.85 s old; the answer said lease_left_ms 2651), h4's renewals never
// reached it, h4's member ended the lease at 04.110 ("hot lost ...:
// expired"), and the coordinator granted its own waiting client at 04.136,
// 2652 ms padded (x 1.002 + 20 ms) after it had sent h4's grant: no
// overlap, fences 0xa0400000007 then 0xa0400000008. The bench counted the
// lease as a full --lease (3 s) from the grant's answer, to 04.46, and
// called the grant at 04.142 a second holder.
func TestLinkVerdict(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse("15:04:05.000", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Trial 4 as recorded: the grant's answer at 01.458 with 2651 ms left;
	// one renewal sent at 02.462, not confirmed (the cut at 02.386 was
	// between h4 and its coordinator); the waiter's grant came back at
	// 04.142 and the release was asked right after it (the trial stops
	// waiting when the grant comes: within the same millisecond).
	trial4 := linkTimeline{
		cut:         at("14:45:02.386"),
		leaseEnd:    linkLeaseEnd(at("14:45:01.458"), 2651),
		released:    at("14:45:04.142").Add(300 * time.Microsecond),
		granted:     at("14:45:04.142"),
		holderFence: 0xa0400000007, waiterFence: 0xa0400000008,
	}
	// Trial 1: h1 held, h2 waited, h5 coordinated; every renewal was
	// confirmed (the last at 40.713, 2999 ms left), and h2 was granted
	// 1 ms after the release.
	trial1 := linkTimeline{
		cut:         at("14:44:34.809"),
		leaseEnd:    linkLeaseEnd(at("14:44:40.713"), 2999),
		released:    at("14:44:40.810"),
		granted:     at("14:44:40.811"),
		holderFence: 0xa0400000001, waiterFence: 0xa0400000002,
	}
	early := trial4
	early.granted = at("14:45:04.000") // before the lease h4's client was told of ended
	stale := trial1
	stale.waiterFence = trial1.holderFence // after the release, but the fence did not grow
	never := trial4
	never.granted = time.Time{}

	for _, tc := range []struct {
		name string
		tl   linkTimeline
		want linkVerdict
		took time.Duration
	}{
		{"recorded trial 4: lease cut by the coordinator, renewals unconfirmed", trial4, linkAfterLapse, 33 * time.Millisecond},
		{"recorded trial 1: renewals confirmed, granted after the release", trial1, linkAfterRelease, time.Millisecond},
		{"granted while the holder's lease ran", early, linkTwoHolders, 0},
		{"granted after the release with the holder's fence", stale, linkTwoHolders, 0},
		{"not granted while cut", never, linkNotGranted, 0},
	} {
		v, took := tc.tl.verdict()
		if v != tc.want || took != tc.took {
			t.Errorf("%s: verdict %d after %v, want %d after %v", tc.name, v, took, tc.want, tc.took)
		}
	}
}
