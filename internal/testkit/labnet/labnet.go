package labnet

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet/l2switch"
)

// Fixed names and numbers of every lab. Interface names are the same in
// every run because each lives in a namespace of its own run; only the
// namespace names carry the run's prefix.
const (
	// MaxHosts is the largest lab New builds: hosts are 10.77.0.1 to
	// 10.77.0.MaxHosts on one /24.
	MaxHosts = 250

	// HostInterface is the name of the lab link inside every host namespace.
	HostInterface = "eth0"

	// BridgeName is the bridge inside the bridge namespace; host i's link
	// ends there in the port "p<i>".
	BridgeName = "br0"

	// StateDirPrefix + prefix is the directory where a lab records itself
	// (shell-sourceable "state" file), shared with scripts/lab.sh so that
	// `lab.sh status` lists Go labs too and `lab.sh down --prefix P` removes a
	// lab whose test binary was killed before its cleanup ran.
	StateDirPrefix = "/run/synclab-lab-"

	nftTable = "synclab"
)

// subnet is the lab's IPv4 network; host i is subnet.10.77.0.i. Every run
// uses the same one: runs are isolated by their namespaces, and a fixed
// subnet lets reference configs (chrony's `allow 10.77.0.0/24`) be static.
var subnet = netip.MustParsePrefix("10.77.0.0/24")

// prefixRE is what a namespace prefix may look like: short, lower-case, no
// separators, so that "<prefix>-h12" is unambiguous and shell-safe.
var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9]{1,15}$`)

// Option changes how New builds a lab.
type Option func(*config)

type config struct {
	prefix string
	sw     bool
	seed   uint64
}

// WithPrefix names the lab's namespaces "<prefix>-br", "<prefix>-h1"... instead
// of a random "sl" + 6 hex digits. Meant for debugging a single run by hand;
// two runs with the same prefix collide and the second one fails.
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// Lab is an emulated LAN of hosts h1..hN, one network namespace each, joined
// by a bridge in a namespace of its own. The root namespace is never
// touched. A Lab is torn down by the Cleanup that New registers.
type Lab struct {
	t        testing.TB
	cfg      config
	prefix   string
	dir      string
	bridgeNS string
	hosts    []*Host

	sw    *l2switch.Switch // nil: kernel bridge
	owned bool             // the namespaces are ours to delete (see setup)
	// neighGrown is what this lab added to the kernel's neighbour table
	// limits (growNeighbours), taken back at teardown.
	neighGrown int

	mu     sync.Mutex
	procs  []*Proc
	seq    int
	cut    map[[2]int]bool // directed links dropped by Partition
	loss   map[int]lossRule
	closed bool
}

// Host is one machine of a Lab: a network namespace with a loopback and one
// link to the bridge.
type Host struct {
	lab   *Lab
	index int
	ns    string
	addr  netip.Addr
}

// New builds a lab of n hosts and registers its teardown with t.Cleanup. It
// fails the test if the lab cannot be built; call Require first so that an
// unprivileged run skips instead.
//
// Every host gets HostInterface (10.77.0.i/24) and lo up, IPv6 disabled on
// the lab link (no router or neighbour solicitations, no MLD), IGMPv2
// forced (no IGMPv3 report bursts), and a route 224.0.0.0/4 via its link so
// that multicast sends work without a default route. The bridge forwards
// multicast to every port (snooping off), which makes delivery independent
// of IGMP timing.
func New(t testing.TB, n int, opts ...Option) *Lab {
	t.Helper()
	if n < 1 || n > MaxHosts {
		t.Fatalf("labnet: New(%d): a lab has 1 to %d hosts", n, MaxHosts)
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.prefix == "" {
		cfg.prefix = randomPrefix()
	}
	if !prefixRE.MatchString(cfg.prefix) {
		t.Fatalf("labnet: prefix %q: want a lower-case letter then 1-15 letters or digits", cfg.prefix)
	}
	l := &Lab{
		t:        t,
		cfg:      cfg,
		prefix:   cfg.prefix,
		dir:      t.TempDir(),
		bridgeNS: cfg.prefix + "-br",
		cut:      make(map[[2]int]bool),
		loss:     make(map[int]lossRule),
	}
	for i := 1; i <= n; i++ {
		l.hosts = append(l.hosts, &Host{
			lab:   l,
			index: i,
			ns:    fmt.Sprintf("%s-h%d", cfg.prefix, i),
			addr:  hostAddr(i),
		})
	}
	// Registered before anything exists: teardown copes with a lab that was
	// only half built, so a failure in setup leaks nothing.
	t.Cleanup(l.teardown)
	start := time.Now()
	if err := l.setup(); err != nil {
		t.Fatalf("labnet: building lab %s of %d hosts: %v", l.prefix, n, err)
	}
	t.Logf("labnet: lab %s: %d hosts on %s up in %v (logs in %s)", l.prefix, n, subnet, time.Since(start).Round(time.Millisecond), l.dir)
	return l
}

func hostAddr(i int) netip.Addr {
	a := subnet.Addr().As4()
	a[3] = byte(i)
	return netip.AddrFrom4(a)
}

func randomSeed() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return binary.LittleEndian.Uint64(b[:]) | 1 // never 0, which means "pick one"
}

func randomPrefix() string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return "sl" + hex.EncodeToString(b[:])
}

// namespaces lists every namespace of the lab, bridge first.
func (l *Lab) namespaces() []string {
	ns := []string{l.bridgeNS}
	for _, h := range l.hosts {
		ns = append(ns, h.ns)
	}
	return ns
}

func nsPath(ns string) string { return "/run/netns/" + ns }

// setup runs one `ip -batch` per namespace, the host ones in parallel, and
// writes sysctls from threads inside the namespaces: on the project's
// machines eight hosts come up in 30-50 ms this way, against most of a
// second with one process per command (`ip netns exec` alone costs ~6 ms).
func (l *Lab) setup() error {
	// Another run holding the same names (WithPrefix) must not be touched,
	// not even by our teardown: only namespaces this lab made are its own.
	for _, ns := range l.namespaces() {
		if _, err := os.Stat(nsPath(ns)); err == nil {
			return fmt.Errorf("labnet: namespace %s already exists (another run with the same prefix?)", ns)
		}
	}
	if _, err := os.Stat(l.stateDir()); err == nil {
		return fmt.Errorf("labnet: %s already exists (another run with the same prefix?)", l.stateDir())
	}
	l.owned = true
	var b strings.Builder
	for _, ns := range l.namespaces() {
		fmt.Fprintf(&b, "netns add %s\n", ns)
	}
	if err := run(b.String(), "ip", "-batch", "-"); err != nil {
		return err
	}
	if err := l.writeState(); err != nil {
		return err
	}
	if need := len(l.hosts) * len(l.hosts); need > neighSpare {
		if err := growNeighbours(need); err != nil {
			return err
		}
		l.neighGrown = need
		l.t.Logf("labnet: kernel neighbour table limits raised by %d entries for %d hosts (taken back at teardown)", need, len(l.hosts))
	}

	// Defaults first, so that the devices created next inherit them; "all"
	// for force_igmp_version is honoured by the kernel for every device.
	sysctls := map[string][][2]string{
		l.bridgeNS: {
			{"net/ipv6/conf/all/disable_ipv6", "1"},
			{"net/ipv6/conf/default/disable_ipv6", "1"},
		},
	}
	for _, h := range l.hosts {
		sysctls[h.ns] = [][2]string{
			{"net/ipv6/conf/default/disable_ipv6", "1"},
			{"net/ipv4/conf/all/force_igmp_version", "2"},
			{"net/ipv4/conf/default/force_igmp_version", "2"},
		}
	}
	if err := parallel(l.namespaces(), func(ns string) error { return writeSysctls(nsPath(ns), sysctls[ns]) }); err != nil {
		return err
	}

	b.Reset()
	master := ""
	if !l.cfg.sw {
		fmt.Fprintf(&b, "link add name %s type bridge mcast_snooping 0\n", BridgeName)
		fmt.Fprintf(&b, "link set %s up\n", BridgeName)
		master = "master " + BridgeName
	}
	for _, h := range l.hosts {
		fmt.Fprintf(&b, "link add name %s type veth peer name %s netns %s\n", h.Port(), HostInterface, h.ns)
		fmt.Fprintf(&b, "link set %s %s up\n", h.Port(), master)
	}
	if err := run(b.String(), "ip", "-n", l.bridgeNS, "-batch", "-"); err != nil {
		return err
	}

	err := parallel(l.hosts, func(h *Host) error {
		script := fmt.Sprintf("link set lo up\n"+
			"addr add %s/%d dev %s\n"+
			"link set %s up\n"+
			"route add 224.0.0.0/4 dev %s\n",
			h.addr, subnet.Bits(), HostInterface, HostInterface, HostInterface)
		return run(script, "ip", "-n", h.ns, "-batch", "-")
	})
	if err != nil {
		return err
	}
	if l.cfg.sw {
		return l.openSwitch()
	}
	return l.nft(baseRuleset)
}

// parallel runs fn for every item at once and returns the first error.
func parallel[T any](items []T, fn func(T) error) error {
	errs := make(chan error, len(items))
	for _, it := range items {
		go func() { errs <- fn(it) }()
	}
	var first error
	for range items {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (l *Lab) stateDir() string { return StateDirPrefix + l.prefix }

// writeState records the lab in the format scripts/lab.sh reads.
func (l *Lab) writeState() error {
	if err := os.MkdirAll(l.stateDir(), 0o755); err != nil {
		return err
	}
	state := fmt.Sprintf("PREFIX=%s\nN=%d\nOWNER=labnet\nPID=%d\nTEST=%q\n", l.prefix, len(l.hosts), os.Getpid(), l.t.Name())
	return os.WriteFile(filepath.Join(l.stateDir(), "state"), []byte(state), 0o644)
}

// teardown kills every process in the lab's namespaces (the ones Start made
// and anything they forked), deletes the namespaces, which takes the veths,
// the bridge and the nftables table with them, and checks that nothing is
// left.
func (l *Lab) teardown() {
	l.mu.Lock()
	l.closed = true
	procs := l.procs
	l.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
	if l.sw != nil {
		l.sw.Close()
	}
	if !l.owned {
		return
	}
	var b strings.Builder
	for _, ns := range l.namespaces() {
		if _, err := os.Stat(nsPath(ns)); err != nil {
			continue
		}
		// Strays: children of lab processes, or processes the test put
		// in the namespace itself (`ip netns exec` in a goroutine).
		// Identified by their namespace, so nothing outside the lab is
		// ever signalled.
		pids, _ := namespacePIDs(nsPath(ns))
		for _, pid := range pids {
			l.t.Logf("labnet: killing stray process %d in %s", pid, ns)
			syscall.Kill(pid, syscall.SIGKILL)
		}
		fmt.Fprintf(&b, "netns del %s\n", ns)
	}
	if b.Len() > 0 {
		if err := run(b.String(), "ip", "-force", "-batch", "-"); err != nil {
			l.t.Errorf("labnet: tearing down lab %s: %v", l.prefix, err)
		}
	}
	for _, ns := range l.namespaces() {
		if _, err := os.Stat(nsPath(ns)); err == nil {
			l.t.Errorf("labnet: namespace %s still exists after teardown", ns)
		}
	}
	if l.neighGrown > 0 {
		if err := growNeighbours(-l.neighGrown); err != nil {
			l.t.Errorf("labnet: %v", err)
		}
		l.neighGrown = 0
	}
	os.RemoveAll(l.stateDir())
}

// The kernel keeps one neighbour (ARP) table for every network namespace:
// its limits (gc_thresh2, gc_thresh3: 512 and 1024 entries by default)
// count the entries of all of them, and a lab whose hosts all talk to one
// another holds n(n-1). From about 32 hosts on, new entries are refused
// ("neighbor table overflow" in the kernel log) and some pairs of hosts
// cannot reach each other at all: a 64-host electd lab never agreed on a
// leader. A lab larger than neighSpare entries' worth adds n*n to both
// limits and takes it back at teardown, so that labs running at once add
// up; a lab killed before its teardown leaves the limits raised (a larger
// ARP cache, nothing worse).
const neighSpare = 256

const neighThresh = "/proc/sys/net/ipv4/neigh/default/gc_thresh"

// neighLock serialises growNeighbours across processes: two test binaries
// whose large labs read and wrote the limits at once would lose one's
// share.
const neighLock = "/run/synclab-labnet-neigh.lock"

// growNeighbours adds by (negative: takes back) to gc_thresh2 and
// gc_thresh3.
func growNeighbours(by int) error {
	lock, err := os.OpenFile(neighLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("neighbour table limit: %w", err)
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("neighbour table limit: lock %s: %w", neighLock, err)
	}
	for _, k := range []string{"2", "3"} {
		b, err := os.ReadFile(neighThresh + k)
		if err != nil {
			return fmt.Errorf("neighbour table limit: %w", err)
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("neighbour table limit %s: %w", neighThresh+k, err)
		}
		if err := os.WriteFile(neighThresh+k, []byte(strconv.Itoa(max(v+by, 128))), 0o644); err != nil {
			return fmt.Errorf("neighbour table limit: %w", err)
		}
	}
	return nil
}

// Prefix is the lab's namespace name prefix, unique to this run.
func (l *Lab) Prefix() string { return l.prefix }

// Dir is the directory holding the lab's process logs (a t.TempDir).
func (l *Lab) Dir() string { return l.dir }

// N is the number of hosts.
func (l *Lab) N() int { return len(l.hosts) }

// BridgeNamespace is the name of the namespace holding the bridge, for
// inspection with `ip netns exec NAME nft list ruleset` and the like.
func (l *Lab) BridgeNamespace() string { return l.bridgeNS }

// Host returns host i, 1-based as in h1..hN. An index out of range fails the
// test.
func (l *Lab) Host(i int) *Host {
	l.t.Helper()
	if i < 1 || i > len(l.hosts) {
		l.t.Fatalf("labnet: Host(%d): lab %s has hosts 1 to %d", i, l.prefix, len(l.hosts))
	}
	return l.hosts[i-1]
}

// Hosts returns every host, h1 first.
func (l *Lab) Hosts() []*Host { return append([]*Host(nil), l.hosts...) }

// Name is the host's short name, "h1" to "hN".
func (h *Host) Name() string { return "h" + strconv.Itoa(h.index) }

// Index is the host's number, 1-based.
func (h *Host) Index() int { return h.index }

// Namespace is the name of the host's network namespace, as `ip netns list`
// shows it.
func (h *Host) Namespace() string { return h.ns }

// Addr is the host's address on the lab link.
func (h *Host) Addr() netip.Addr { return h.addr }

// Interface is the name of the host's lab link inside its namespace.
func (h *Host) Interface() string { return HostInterface }

// Port is the name of the other end of the host's link: the bridge port in
// the bridge namespace, which is what Partition and Loss match on.
func (h *Host) Port() string { return "p" + strconv.Itoa(h.index) }

// Do runs fn on an OS thread that has joined the host's network namespace.
// Sockets fn opens belong to the namespace for their whole life and may be
// used from any goroutine afterwards; goroutines fn starts do not run in the
// namespace. This is the cheap way (no process) for a test to own a socket
// on a host:
//
//	var conn *net.UDPConn
//	err := h.Do(func() (err error) {
//		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: h.Addr().AsSlice()})
//		return err
//	})
func (h *Host) Do(fn func() error) error { return inNamespace(nsPath(h.ns), fn) }

// Run runs argv to completion inside the host's namespace and returns its
// combined output. A failure is a *CmdError holding the output. Run works in
// cleanups too (it is not tied to t.Context, which is cancelled before
// cleanups run), so a test can collect a daemon's status after a failure.
func (h *Host) Run(t testing.TB, argv ...string) (string, error) {
	t.Helper()
	if len(argv) == 0 {
		t.Fatalf("labnet: %s.Run: empty command", h.Name())
	}
	args := append([]string{"netns", "exec", h.ns}, argv...)
	cmd := exec.Command("ip", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), &CmdError{Args: append([]string{"ip"}, args...), Output: string(out), Err: err}
	}
	return string(out), nil
}

// CmdError is a command of the harness (ip, nft, or one given to Run) that
// failed, with what it printed.
type CmdError struct {
	Args   []string
	Output string
	Err    error
}

func (e *CmdError) Error() string {
	out := strings.TrimSpace(e.Output)
	if len(out) > 2000 {
		out = "..." + out[len(out)-2000:]
	}
	return fmt.Sprintf("labnet: %s: %v: %s", strings.Join(e.Args, " "), e.Err, out)
}

func (e *CmdError) Unwrap() error { return e.Err }

// commandsRun counts the harness commands run started: TestLabLayout
// checks that a lab's setup is batched by their number, not by its time.
var commandsRun atomic.Int64

// run runs a harness command with stdin and returns a *CmdError on failure.
func run(stdin string, name string, args ...string) error {
	commandsRun.Add(1)
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			err = fmt.Errorf("%w (install iproute2 and nftables)", err)
		}
		return &CmdError{Args: append([]string{name}, args...), Output: out.String(), Err: err}
	}
	return nil
}
