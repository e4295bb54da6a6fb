package labnet

import (
	"fmt"
	"slices"
	"strings"

	"github.com/synclab/synclab/internal/testkit/labnet/l2switch"
)

// baseRuleset is loaded into the bridge namespace when a bridged lab is
// built (a lab WithSwitch has no bridge path; its switch does all this).
// Impairments act on the bridge's forward path, never on a host's own
// output: a drop on output makes the sender's send fail with EPERM, which no
// real network does; a drop on the bridge is silent loss, as on a real
// switch. Ports are matched by name (the "p<i>" of Host.Port).
//
//	host i --eth0==p<i>--> [bridge forward hook: partitions, then loss] --p<j>==eth0--> host j
//
// A partition is a pair of directed entries in the "partitions" set, so
// cutting and healing are element updates, never rule rewrites. The "loss"
// chain is rewritten whole (in one transaction) on every Loss call; the
// "match" chain holds DropUDPByte's rules.
const baseRuleset = `table bridge ` + nftTable + ` {
	set partitions {
		type ifname . ifname
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname . oifname @partitions drop
		jump match
		jump loss
	}
	chain match {
	}
	chain loss {
	}
}
`

type lossRule struct {
	percent int
	allIP   bool // every IPv4 packet (TCP too), not only UDP
}

// nft applies a script in the bridge namespace as one transaction.
func (l *Lab) nft(script string) error {
	return run(script, "ip", "netns", "exec", l.bridgeNS, "nft", "-f", "-")
}

// mustNFT applies script or fails the test.
func (l *Lab) mustNFT(what, script string) {
	l.t.Helper()
	if err := l.nft(script); err != nil {
		l.t.Fatalf("labnet: %s: %v", what, err)
	}
}

func (l *Lab) checkPair(what string, a, b int) {
	l.t.Helper()
	if a < 1 || a > len(l.hosts) || b < 1 || b > len(l.hosts) || a == b {
		l.t.Fatalf("labnet: %s(%d, %d): want two different hosts of 1 to %d", what, a, b, len(l.hosts))
	}
}

func elems(links [][2]int) string {
	var s []string
	for _, k := range links {
		s = append(s, fmt.Sprintf(`"p%d" . "p%d"`, k[0], k[1]))
	}
	return "{ " + strings.Join(s, ", ") + " }"
}

// Partition cuts the link between hosts a and b in both directions: frames
// between them are dropped silently by the bridge, traffic with every other
// host is untouched. Cutting a cut link does nothing. Like every Lab method
// that changes the network it must be called from the test's goroutine, and
// fails the test on error.
func (l *Lab) Partition(a, b int) {
	l.t.Helper()
	l.checkPair("Partition", a, b)
	l.cutLinks("Partition", [][2]int{{a, b}, {b, a}})
}

// Heal restores the link between a and b cut by Partition or Split.
func (l *Lab) Heal(a, b int) {
	l.t.Helper()
	l.checkPair("Heal", a, b)
	l.mu.Lock()
	var heal [][2]int
	for _, k := range [][2]int{{a, b}, {b, a}} {
		if l.cut[k] {
			heal = append(heal, k)
			delete(l.cut, k)
		}
	}
	l.mu.Unlock()
	if len(heal) == 0 {
		return
	}
	if l.sw != nil {
		l.setDown("Heal", heal, false)
		return
	}
	l.mustNFT("Heal", fmt.Sprintf("delete element bridge %s partitions %s\n", nftTable, elems(heal)))
}

// HealAll restores every link cut by Partition or Split.
func (l *Lab) HealAll() {
	l.t.Helper()
	l.mu.Lock()
	var heal [][2]int
	for k := range l.cut {
		heal = append(heal, k)
	}
	clear(l.cut)
	l.mu.Unlock()
	if l.sw != nil {
		l.setDown("HealAll", heal, false)
		return
	}
	l.mustNFT("HealAll", fmt.Sprintf("flush set bridge %s partitions\n", nftTable))
}

// Split cuts every link between hosts of different groups, in one step: for
// example Split([]int{1, 2}, []int{3, 4, 5}) leaves a minority and a
// majority side. Hosts in no group keep all their links.
func (l *Lab) Split(groups ...[]int) {
	l.t.Helper()
	var links [][2]int
	for gi, g := range groups {
		for _, a := range g {
			for gj, h := range groups {
				if gi == gj {
					continue
				}
				for _, b := range h {
					l.checkPair("Split", a, b)
					links = append(links, [2]int{a, b})
				}
			}
		}
	}
	l.cutLinks("Split", links)
}

func (l *Lab) cutLinks(what string, links [][2]int) {
	l.t.Helper()
	l.mu.Lock()
	var add [][2]int
	for _, k := range links {
		if !l.cut[k] {
			l.cut[k] = true
			add = append(add, k)
		}
	}
	l.mu.Unlock()
	if len(add) == 0 {
		return
	}
	if l.sw != nil {
		l.setDown(what, add, true)
		return
	}
	l.mustNFT(what, fmt.Sprintf("add element bridge %s partitions %s\n", nftTable, elems(add)))
}

// Loss makes the bridge drop each UDP packet to or from host at random with
// the given probability in percent (0 removes the rule). Each direction is
// drawn independently, so between two lossy hosts the losses add up. ARP and
// TCP are never dropped: TCP streams see no loss (use LossIP for that), and
// neighbour resolution keeps working.
func (l *Lab) Loss(host, percent int) {
	l.t.Helper()
	l.setLoss("Loss", host, lossRule{percent: percent})
}

// LossIP is Loss for every IPv4 packet, TCP included; ARP still passes.
func (l *Lab) LossIP(host, percent int) {
	l.t.Helper()
	l.setLoss("LossIP", host, lossRule{percent: percent, allIP: true})
}

func (l *Lab) setLoss(what string, host int, r lossRule) {
	l.t.Helper()
	if host < 1 || host > len(l.hosts) || r.percent < 0 || r.percent > 100 {
		l.t.Fatalf("labnet: %s(%d, %d): want a host of 1 to %d and a percentage of 0 to 100", what, host, r.percent, len(l.hosts))
	}
	if l.sw != nil {
		if err := l.sw.SetPortLoss(host, l2switch.PortLoss{Percent: float64(r.percent), AllIP: r.allIP}); err != nil {
			l.t.Fatalf("labnet: %s: %v", what, err)
		}
		return
	}
	l.mu.Lock()
	if r.percent == 0 {
		delete(l.loss, host)
	} else {
		l.loss[host] = r
	}
	script := l.lossScript()
	l.mu.Unlock()
	l.mustNFT(what, script)
}

// lossScript rewrites the loss chain from l.loss; the caller holds l.mu.
// numgen draws 0..99 uniformly per packet, so "< p" drops p percent.
func (l *Lab) lossScript() string {
	var b strings.Builder
	fmt.Fprintf(&b, "flush chain bridge %s loss\n", nftTable)
	hosts := make([]int, 0, len(l.loss))
	for h := range l.loss {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	for _, h := range hosts {
		r := l.loss[h]
		match := "meta l4proto udp"
		if r.allIP {
			match = "ether type ip"
		}
		// numgen cannot compare with 100 (its range is 0-99): total loss
		// is a plain drop.
		draw := fmt.Sprintf(" numgen random mod 100 < %d", r.percent)
		if r.percent == 100 {
			draw = ""
		}
		for _, dir := range []string{"iifname", "oifname"} {
			fmt.Fprintf(&b, "add rule bridge %s loss %s \"p%d\" %s%s drop\n", nftTable, dir, h, match, draw)
		}
	}
	return b.String()
}

// DropUDPByte makes the bridge drop every UDP packet to or from host whose
// payload holds value at byte offset off: a loss that picks one kind of
// message (a protocol's kind byte) and spares every other, which random
// loss cannot. It lasts until ClearUDPByteDrops. Bridged labs only (a lab
// WithSwitch fails the test).
func (l *Lab) DropUDPByte(host, off int, value byte) {
	l.t.Helper()
	if host < 1 || host > len(l.hosts) || off < 0 {
		l.t.Fatalf("labnet: DropUDPByte(%d, %d): want a host of 1 to %d and an offset from 0", host, off, len(l.hosts))
	}
	if l.sw != nil {
		l.t.Fatalf("labnet: DropUDPByte: not on a lab WithSwitch")
	}
	var b strings.Builder
	for _, dir := range []string{"iifname", "oifname"} {
		// @th counts bits from the UDP header's start: the payload is
		// 8 bytes in.
		fmt.Fprintf(&b, "add rule bridge %s match %s \"p%d\" meta l4proto udp @th,%d,8 == %d drop\n", nftTable, dir, host, (8+off)*8, value)
	}
	l.mustNFT("DropUDPByte", b.String())
}

// ClearUDPByteDrops removes every DropUDPByte rule.
func (l *Lab) ClearUDPByteDrops() {
	l.t.Helper()
	if l.sw != nil {
		return
	}
	l.mustNFT("ClearUDPByteDrops", fmt.Sprintf("flush chain bridge %s match\n", nftTable))
}
