package server

import (
	"net/netip"
	"time"
)

// verdict is the limiter's decision on one request.
type verdict uint8

const (
	allow verdict = iota // answer
	kiss                 // over the limit: answer with a RATE kiss-o'-death
	drop                 // over the limit, kissed recently: no answer
)

// expirePerTick bounds the work of one Tick: the table is bounded anyway,
// expiry only returns memory early, and a tick must stay short.
const expirePerTick = 256

// client is one source address in the limiter's table, also a node of the
// table's recency list (most recently heard at the head).
type client struct {
	addr netip.Addr
	// tat is the theoretical arrival time of the GCRA form of the token
	// bucket: the bucket is full when tat <= now, and a request is over
	// the limit when tat > now + (Burst-1)×Interval. One time per client
	// instead of a token count and a refill time.
	tat time.Time
	// kissed is when the last RATE kiss-o'-death went out (zero: never).
	kissed     time.Time
	prev, next *client
}

// limiter is the per-client rate limiter: a token bucket per source
// address, in a table bounded by RateLimit.MaxClients with least recently
// heard eviction. Idle entries (full bucket, no recent kiss) are expired on
// Tick, so the table holds only clients that sent something recently.
//
// A spoofing flood from many addresses can evict real clients' entries,
// which only resets their buckets to full: the limiter then errs towards
// answering, never towards refusing a well-behaved client.
type limiter struct {
	cfg        RateLimit
	tau        time.Duration // (Burst-1) × Interval: the bucket's slack
	table      map[netip.Addr]*client
	head, tail *client
	evicted    uint64
	// free holds expired entries for reuse (linked by next): a client
	// that comes back after its entry expired costs no allocation, which
	// matters when the interval is short and entries expire at every tick.
	// It never holds more than MaxClients entries.
	free *client
}

func newLimiter(cfg RateLimit) *limiter {
	return &limiter{
		cfg:   cfg,
		tau:   time.Duration(cfg.Burst-1) * cfg.Interval,
		table: make(map[netip.Addr]*client),
	}
}

// check accounts for one request from addr at local time now.
func (l *limiter) check(addr netip.Addr, now time.Time) verdict {
	c := l.table[addr]
	if c == nil {
		c = l.insert(addr)
	} else {
		l.unlink(c)
		l.pushFront(c)
	}
	// A clock that went backwards (a stepped simulated clock, or a real
	// one set by hand) must not lock clients out for the length of the
	// step: state from "the future" is forgotten.
	if c.tat.Sub(now) > l.tau+l.cfg.Interval {
		c.tat = time.Time{}
	}
	if now.Before(c.kissed) {
		c.kissed = time.Time{}
	}
	tat := c.tat
	if tat.Before(now) {
		tat = now
	}
	if tat.Sub(now) <= l.tau {
		c.tat = tat.Add(l.cfg.Interval)
		return allow
	}
	// Over the limit. The request does not consume a token: a client that
	// slows down to the average is answered again at once.
	if c.kissed.IsZero() || now.Sub(c.kissed) >= l.cfg.KissInterval {
		c.kissed = now
		return kiss
	}
	return drop
}

// nextExpiry is when the least recently heard entry becomes idle, the
// next one expire can drop (zero: the table is empty). Entries heard
// later mostly idle later; an exception waits for a later Tick, which
// costs memory for a while, never a wrong answer.
func (l *limiter) nextExpiry() time.Time {
	c := l.tail
	if c == nil {
		return time.Time{}
	}
	at := c.tat
	if !c.kissed.IsZero() {
		if k := c.kissed.Add(l.cfg.KissInterval); k.After(at) {
			at = k
		}
	}
	return at
}

// idle reports whether c carries no state worth keeping at now.
func (l *limiter) idle(c *client, now time.Time) bool {
	return !c.tat.After(now) && (c.kissed.IsZero() || now.Sub(c.kissed) >= l.cfg.KissInterval)
}

// expire drops idle entries from the least recently heard end, at most
// expirePerTick of them.
func (l *limiter) expire(now time.Time) {
	for n := 0; n < expirePerTick && l.tail != nil && l.idle(l.tail, now); n++ {
		c := l.tail
		l.unlink(c)
		delete(l.table, c.addr)
		*c = client{next: l.free}
		l.free = c
	}
}

func (l *limiter) insert(addr netip.Addr) *client {
	if len(l.table) >= l.cfg.MaxClients {
		old := l.tail
		l.unlink(old)
		delete(l.table, old.addr)
		l.evicted++
		*old = client{next: l.free}
		l.free = old
	}
	c := l.free
	if c != nil {
		l.free = c.next
		*c = client{addr: addr}
	} else {
		c = &client{addr: addr}
	}
	l.table[addr] = c
	l.pushFront(c)
	return c
}

func (l *limiter) pushFront(c *client) {
	c.prev, c.next = nil, l.head
	if l.head != nil {
		l.head.prev = c
	}
	l.head = c
	if l.tail == nil {
		l.tail = c
	}
}

func (l *limiter) unlink(c *client) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		l.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		l.tail = c.prev
	}
	c.prev, c.next = nil, nil
}
