package central

import (
	"time"

	"github.com/synclab/synclab/pkg/mutex"
)

// SetSkipUnknownAtOnce turns the mutation skipUnknownAtOnce on or off
// (TestOracleCatchesEarlySkip); it returns the previous setting.
func SetSkipUnknownAtOnce(on bool) bool {
	was := skipUnknownAtOnce
	skipUnknownAtOnce = on
	return was
}

// SilentLapseFor is silentLapse (2 x DeadAfter) for a core built with opt.
func SilentLapseFor(opt mutex.Options) (time.Duration, error) {
	cfg, err := ConfigFor(opt)
	if err == nil {
		err = cfg.validate()
	}
	return silentLapse(cfg.DeadAfter), err
}

// ExpiredOf is how many grants of member's whose lease ended at coordinator
// c unconfirmed it keeps (peer.expired), 0 when c does not coordinate.
func ExpiredOf(c *Core, member uint32) int {
	if c.co == nil || c.co.peers[member] == nil {
		return 0
	}
	return len(c.co.peers[member].expired)
}
