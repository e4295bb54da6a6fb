package truetime

import (
	"fmt"
	"os"
	"time"
)

// Publisher writes the page: timed's side. Not safe for concurrent use
// (the daemon writes under its loop's lock); readers in any process may
// read meanwhile.
type Publisher struct {
	m         *mapping
	path      string
	pid       uint64
	writing   bool
	next      uint64 // the seq that ends the write in progress
	published uint64
	closed    bool
}

// Create opens the page at path for publishing, creating it mode 0640,
// given to group gid unless gid is negative. A page already there (a
// previous run's) is taken over, its seqlock continued, so that readers
// that mapped it follow; a file of another size or kind is reset.
func Create(path string, gid int) (*Publisher, error) {
	m, fresh, err := mapWritable(path, gid)
	if err != nil {
		return nil, fmt.Errorf("truetime page %s: %w", path, err)
	}
	p := &Publisher{m: m, path: path, pid: uint64(os.Getpid())}
	if magic, version := m.p.header(); fresh || magic != Magic || version != Version {
		seq := m.p.begin()
		for i := wordBase; i < words; i++ {
			m.p.store(i, 0)
		}
		m.p.store(wordMagic, uint64(Magic)|uint64(Version)<<32)
		m.p.end(seq)
	}
	return p, nil
}

// Path returns the page's path.
func (p *Publisher) Path() string { return p.path }

// Begin marks a write in progress: readers wait (retrying) until Publish
// ends it. The daemon begins before it adjusts the clock, so that no
// reader combines the old publication with a clock already changed.
func (p *Publisher) Begin() {
	if !p.writing {
		p.next = p.m.p.begin()
		p.writing = true
	}
}

// Publish writes pub (its PID and Published are the publisher's) and
// ends the write, begun here if Begin was not called.
func (p *Publisher) Publish(pub Publication) {
	p.Begin()
	p.published++
	pub.PID, pub.Published = p.pid, p.published
	p.m.p.write(pub)
	p.m.p.end(p.next)
	p.writing = false
}

// Published returns how many publications this Publisher made.
func (p *Publisher) Published() uint64 { return p.published }

// Close marks the page stopped (FlagStopped: readers refuse it at once,
// as stale, and open the path again for a later daemon's page), unmaps
// it and leaves the file. A daemon that dies without Close leaves its
// last publication, which readers widen with its age until it is stale.
func (p *Publisher) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	p.Publish(Publication{Base: time.Now(), Flags: FlagStopped, StaleAfter: time.Nanosecond})
	return p.m.unmap()
}
