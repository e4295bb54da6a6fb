//go:build linux

package l2switch

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// vnetHdrLen is the size of struct virtio_net_hdr, which PACKET_VNET_HDR
// puts in front of every frame read and expects in front of every frame
// written:
//
//	 0       1       2               4               6               8              10
//	+-------+-------+---------------+---------------+---------------+---------------+
//	| flags |gsotype|    hdr_len    |   gso_size    |  csum_start   |  csum_offset  |
//	+-------+-------+---------------+---------------+---------------+---------------+
//
// veth hands frames over with their checksum left to the hardware
// (CHECKSUM_PARTIAL: flags has NEEDS_CSUM) and TCP super-frames of up to
// 64 KiB (gso_type set). A plain packet socket would forward the unfinished
// checksum as if it were final, and every receiver would drop the datagram;
// with the header passed through unchanged, the egress veth carries the same
// checksum state and segmentation the bridge would have, and the receiving
// stack treats the frame exactly as if it had crossed a bridge.
const vnetHdrLen = 10

// Frame layout, as far as the switch looks into it.
const (
	ethHdrLen    = 14
	ethTypeOff   = 12
	ethTypeIPv4  = 0x0800
	ipProtoOff   = ethHdrLen + 9
	ipProtoUDP   = 17
	maxFrameSize = vnetHdrLen + 65536 + ethHdrLen
)

// spinMargin is how early the transmit thread stops sleeping and starts
// spinning on the clock. With the thread's timer slack at 1 ns a sleep
// overshoots by the VM's wake-up latency, typically 10-50 us; the spin
// absorbs that, at the price of up to this much CPU per delayed frame.
const spinMargin = 60 * time.Microsecond

// Config tunes a Switch. The zero Config is usable.
type Config struct {
	// Seed seeds the random draws of loss, duplication and jitter, so that
	// a run can be repeated as far as the scheduling of the host allows.
	// Zero picks a random seed.
	Seed uint64
}

// Switch is a user-space Ethernet switch between network interfaces (the
// switch-side ends of the lab's veth pairs), with per-directed-link delay,
// jitter, loss, duplication and link-down. It learns MAC addresses like a
// bridge and floods broadcast, multicast and unknown destinations.
//
// Frames without delay are forwarded by the reading goroutine itself; delayed
// ones wait in a time-ordered queue served by one goroutine locked to an OS
// thread with a 1 ns timer slack, which sleeps in ppoll until shortly before
// the deadline and then spins, because Go timers round sub-millisecond
// sleeps up to about a millisecond.
type Switch struct {
	ports []*port
	start time.Time // monotonic base of all deadlines

	mu    sync.Mutex // guards everything below
	links [][]Link   // [from-1][to-1]
	last  [][]int64  // due time of the last frame queued per link, for FIFO
	stats [][]Stats
	loss  []PortLoss
	fdb   map[[6]byte]int // MAC -> port index (0-based)
	rng   *rand.Rand

	qmu    sync.Mutex // guards the queue
	queue  frameQueue
	seq    uint64
	closed bool
	wake   int // eventfd: the queue has a new head, or the switch closes

	wg sync.WaitGroup
}

type port struct {
	name string
	fd   int
	file *os.File // the fd registered with Go's poller, for reads
}

// Open opens a packet socket on each named interface, in the calling
// thread's network namespace, and starts forwarding between them. Ports are
// numbered from 1 in the order given. Every link starts as a perfect cable.
func Open(ifnames []string, cfg Config) (*Switch, error) {
	if len(ifnames) == 0 {
		return nil, errors.New("l2switch: no ports")
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	n := len(ifnames)
	s := &Switch{
		start: time.Now(),
		links: grid[Link](n),
		last:  grid[int64](n),
		stats: grid[Stats](n),
		loss:  make([]PortLoss, n),
		fdb:   make(map[[6]byte]int),
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
	var err error
	if s.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("l2switch: eventfd: %w", err)
	}
	for _, name := range ifnames {
		p, err := openPort(name)
		if err != nil {
			s.closePorts()
			unix.Close(s.wake)
			return nil, err
		}
		s.ports = append(s.ports, p)
	}
	s.wg.Add(len(s.ports) + 1)
	for i := range s.ports {
		go s.readLoop(i)
	}
	go s.transmitLoop()
	return s, nil
}

func grid[T any](n int) [][]T {
	g := make([][]T, n)
	for i := range g {
		g[i] = make([]T, n)
	}
	return g
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func openPort(name string) (*port, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("l2switch: port %s: %w", name, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("l2switch: port %s: packet socket: %w", name, err)
	}
	fail := func(what string, err error) (*port, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("l2switch: port %s: %s: %w", name, what, err)
	}
	// Options before bind, so that no frame is ever read without them.
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
		return fail("PACKET_VNET_HDR", err)
	}
	// Our own transmissions would otherwise come back on the same socket.
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fail("PACKET_IGNORE_OUTGOING", err)
	}
	// Room for bursts while the reader is not scheduled.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4<<20)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		return fail("bind", err)
	}
	// Frames for other hosts reach an AF_PACKET tap anyway; promiscuous mode
	// only makes that explicit for interfaces that filter by MAC.
	mreq := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return fail("promiscuous mode", err)
	}
	// The fd is non-blocking, so os.NewFile registers it with the runtime
	// poller: reads park the goroutine, not a thread.
	return &port{name: name, fd: fd, file: os.NewFile(uintptr(fd), "packet:"+name)}, nil
}

func (s *Switch) closePorts() {
	for _, p := range s.ports {
		p.file.Close()
	}
}

// Close stops forwarding, drops the frames still queued and closes the
// sockets. It waits for the switch's goroutines to end.
func (s *Switch) Close() error {
	s.qmu.Lock()
	if s.closed {
		s.qmu.Unlock()
		return ErrClosed
	}
	s.closed = true
	s.qmu.Unlock()
	s.kick()
	s.closePorts() // unblocks the readers
	s.wg.Wait()
	return unix.Close(s.wake)
}

func (s *Switch) checkPorts(from, to int) error {
	if from < 1 || from > len(s.ports) || to < 1 || to > len(s.ports) || from == to {
		return fmt.Errorf("%w: link %d->%d (ports 1 to %d)", ErrBadPort, from, to, len(s.ports))
	}
	return nil
}

// SetLink replaces the parameters of the directed link from -> to (ports
// numbered from 1). Frames already queued keep the delay they were given.
func (s *Switch) SetLink(from, to int, l Link) error {
	if err := s.checkPorts(from, to); err != nil {
		return err
	}
	if err := l.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	s.links[from-1][to-1] = l
	s.mu.Unlock()
	return nil
}

// Link returns the parameters of the directed link from -> to.
func (s *Switch) Link(from, to int) (Link, error) {
	if err := s.checkPorts(from, to); err != nil {
		return Link{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.links[from-1][to-1], nil
}

// SetPortLoss sets the random loss of frames to and from a port.
func (s *Switch) SetPortLoss(p int, pl PortLoss) error {
	if p < 1 || p > len(s.ports) {
		return fmt.Errorf("%w: %d (ports 1 to %d)", ErrBadPort, p, len(s.ports))
	}
	if !(pl.Percent >= 0 && pl.Percent <= 100) {
		return fmt.Errorf("%w: loss %v%% outside 0-100", ErrBadLink, pl.Percent)
	}
	s.mu.Lock()
	s.loss[p-1] = pl
	s.mu.Unlock()
	return nil
}

// PortLoss returns the random loss set on a port.
func (s *Switch) PortLoss(p int) (PortLoss, error) {
	if p < 1 || p > len(s.ports) {
		return PortLoss{}, fmt.Errorf("%w: %d (ports 1 to %d)", ErrBadPort, p, len(s.ports))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loss[p-1], nil
}

// Stats returns the counters of the directed link from -> to.
func (s *Switch) Stats(from, to int) (Stats, error) {
	if err := s.checkPorts(from, to); err != nil {
		return Stats{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats[from-1][to-1], nil
}

// now is the switch's monotonic clock in nanoseconds.
func (s *Switch) now() int64 { return int64(time.Since(s.start)) }

func (s *Switch) readLoop(i int) {
	defer s.wg.Done()
	p := s.ports[i]
	rc, err := p.file.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, maxFrameSize)
	for {
		var n int
		var from unix.Sockaddr
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, _, _, from, rerr = unix.Recvmsg(int(fd), buf, nil, unix.MSG_TRUNC)
			return rerr != unix.EAGAIN
		})
		if err != nil {
			return // closed
		}
		if rerr != nil {
			if rerr == unix.EINTR {
				continue
			}
			return
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue // belt and braces: PACKET_IGNORE_OUTGOING should have hidden it
		}
		if n > len(buf) || n < vnetHdrLen+ethHdrLen {
			continue // truncated or runt
		}
		s.forward(i, buf[:n])
	}
}

// forward switches one frame (with its vnet header) that arrived on port in.
func (s *Switch) forward(in int, pkt []byte) {
	frame := pkt[vnetHdrLen:]
	var dst, src [6]byte
	copy(dst[:], frame[0:6])
	copy(src[:], frame[6:12])
	ipv4 := binary.BigEndian.Uint16(frame[ethTypeOff:]) == ethTypeIPv4
	udp := ipv4 && len(frame) > ipProtoOff && frame[ipProtoOff] == ipProtoUDP
	now := s.now()

	type out struct {
		port   int
		due    int64
		copies int
	}
	var outs [16]out
	plan := outs[:0]

	s.mu.Lock()
	if src[0]&1 == 0 {
		s.fdb[src] = in
	}
	egress := -1 // all but in
	if dst[0]&1 == 0 {
		if p, ok := s.fdb[dst]; ok {
			if p == in {
				s.mu.Unlock()
				return // for a host on the same port: nothing to do
			}
			egress = p
		}
	}
	for j := range s.ports {
		if j == in || (egress >= 0 && j != egress) {
			continue
		}
		l := &s.links[in][j]
		st := &s.stats[in][j]
		if l.Down || s.portDrops(in, ipv4, udp) || s.portDrops(j, ipv4, udp) ||
			(ipv4 && l.Loss > 0 && s.rng.Float64()*100 < l.Loss) {
			st.Dropped++
			continue
		}
		copies := 1
		if ipv4 && l.Duplicate > 0 && s.rng.Float64()*100 < l.Duplicate {
			copies = 2
			st.Duplicated++
		}
		d := l.Delay
		if l.Jitter > 0 {
			d += time.Duration(s.rng.Int64N(2*int64(l.Jitter)+1)) - l.Jitter
		}
		due := now + int64(max(d, 0))
		if !l.Reorder {
			// Also when the delay has just been lowered to zero: frames
			// still queued on the link go first.
			due = max(due, s.last[in][j])
			s.last[in][j] = due
		}
		st.Forwarded += uint64(copies)
		plan = append(plan, out{port: j, due: due, copies: copies})
	}
	s.mu.Unlock()

	for _, o := range plan {
		for range o.copies {
			if o.due <= now {
				s.send(in, o.port, pkt)
			} else {
				s.enqueue(in, o.port, o.due, pkt)
			}
		}
	}
}

// portDrops draws the port loss of port p for one frame; s.mu is held.
func (s *Switch) portDrops(p int, ipv4, udp bool) bool {
	pl := s.loss[p]
	if pl.Percent <= 0 || !(udp || (pl.AllIP && ipv4)) {
		return false
	}
	return pl.Percent >= 100 || s.rng.Float64()*100 < pl.Percent
}

// send writes a frame (with its vnet header) to port out.
func (s *Switch) send(in, out int, pkt []byte) {
	for {
		_, err := unix.Write(s.ports[out].fd, pkt)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			s.mu.Lock()
			s.stats[in][out].TxErrors++
			s.mu.Unlock()
		}
		return
	}
}

// queued is a delayed frame.
type queued struct {
	due     int64
	seq     uint64 // FIFO among equal deadlines
	in, out int
	pkt     []byte
}

type frameQueue []queued

func (q frameQueue) Len() int { return len(q) }
func (q frameQueue) Less(i, j int) bool {
	return q[i].due < q[j].due || (q[i].due == q[j].due && q[i].seq < q[j].seq)
}
func (q frameQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *frameQueue) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *frameQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

func (s *Switch) enqueue(in, out int, due int64, pkt []byte) {
	s.qmu.Lock()
	if s.closed {
		s.qmu.Unlock()
		return
	}
	s.seq++
	heap.Push(&s.queue, queued{due: due, seq: s.seq, in: in, out: out, pkt: append([]byte(nil), pkt...)})
	head := s.queue[0].seq == s.seq
	s.qmu.Unlock()
	if head {
		s.kick()
	}
}

// kick wakes the transmit thread.
func (s *Switch) kick() {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	unix.Write(s.wake, one[:]) // EAGAIN only if the counter is saturated: it is awake anyway
}

// transmitLoop sends delayed frames at their deadlines. It runs on its own OS
// thread with a 1 ns timer slack (the default 50 us slack alone would be as
// large as the delays we emulate on a LAN), and it never unlocks that thread:
// the thread's slack must not leak to other goroutines.
func (s *Switch) transmitLoop() {
	defer s.wg.Done()
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	fds := []unix.PollFd{{Fd: int32(s.wake), Events: unix.POLLIN}}
	var drain [8]byte
	for {
		s.qmu.Lock()
		if s.closed {
			s.queue = nil
			s.qmu.Unlock()
			return
		}
		var wait int64 = -1 // nothing queued: sleep until kicked
		if len(s.queue) > 0 {
			now := s.now()
			head := s.queue[0]
			if head.due <= now {
				heap.Pop(&s.queue)
				s.qmu.Unlock()
				s.send(head.in, head.out, head.pkt)
				continue
			}
			wait = head.due - now
			if wait <= int64(spinMargin) {
				s.qmu.Unlock()
				for s.now() < head.due {
					// Spin: the deadline is closer than a sleep's overshoot.
				}
				continue
			}
			wait -= int64(spinMargin)
		}
		s.qmu.Unlock()
		var ts *unix.Timespec
		if wait >= 0 {
			t := unix.NsecToTimespec(wait)
			ts = &t
		}
		n, err := unix.Ppoll(fds, ts, nil)
		if err != nil && !errors.Is(err, unix.EINTR) {
			// Cannot happen with a valid eventfd; do not spin on it.
			time.Sleep(time.Millisecond)
		}
		if n > 0 {
			unix.Read(s.wake, drain[:])
		}
	}
}
