// Package e2e holds what the end-to-end tests share; the tests themselves
// live in its subpackages, one per daemon. They test the real binaries as
// real processes (built once per package by Main, started with real
// flags, observed only through their CLIs, `X status --json`, and stopped
// with real signals), on loopback (no privileges) or, for the TestLab*
// tests, on a namespace LAN (internal/testkit/labnet: root; skipped without it, a
// failure under CI=true).
//
// # Which package a test goes in
//
// A test goes in the package of the daemon it exercises, attacks included
// (TestLabAttack*: the attack is on that daemon), and so does a test of a
// mechanism every daemon has, run with one daemon (configuration
// agreement's TestLabAgree*, TestLabClusterStatus*, the restart notices:
// each in the package of the daemon it runs):
//
//	internal/testkit/e2e/timed     timed on loopback: NTP server and client, Cristian, query/compare, traces
//	internal/testkit/e2e/timedlab  timed's lab tests (TestLab*): interop with chrony and ntpsec, Berkeley
//	internal/testkit/e2e/electd    electd, loopback and lab
//	internal/testkit/e2e/mutexd    mutexd and `mutexd lock`, loopback and lab
//	internal/testkit/e2e/orderd    orderd, loopback and lab
//	internal/testkit/e2e/common    what every daemon shares or several take part in: keys and
//	                       --insecure, signals, sd_notify, operator errors, frames
//	                       replayed across daemons, the lab file (TestLabLabFile)
//
// timed's lab tests have a package of their own because with them timed's
// package alone ran for minutes: `go test ./...` runs packages in parallel,
// one package's tests one after the other, so the largest package bounds
// the run. Split a package the same way (by tier, or by mode) when its
// tests pass two minutes on a quiet host; the per-package times are in the
// output of `go test -json` ("Elapsed" of the package's final event).
//
// # Where a helper goes
//
// A helper used by one package stays in that package's _test.go files. A
// helper two packages need moves here, exported: Cluster (loopback hosts
// 127.0.0.31 and up, each daemon's key, logs shown on failure), AttackLab
// (a namespace LAN of members plus an attacker host, frames forged and
// spoofed from it), AgreeLab (three namespace hosts of one daemon for
// configuration agreement and `status --cluster`, with ClusterTable), the
// status readers (StatusOf, Field, Num, PeerSeq) and
// the small ones (FreePort, KeyFile, ExitCode, ShortDir, Others, All,
// NoSysTime, Send, Spoof). Each package's main_test.go has
//
//	func TestMain(m *testing.M) { e2e.Main(m, "electd") } // builds cmd/electd
//
//	type cluster struct{ *e2e.Cluster } // the package's own helpers are its methods
//	func newCluster(t *testing.T, daemon string, n int) *cluster
//
// so that a test calls newCluster(t, "electd", 3) and adds methods to
// cluster (leader, agreed, orderLog) as before the split.
//
// # Moving a test written before the split
//
// A _test.go file written for the old single package e2e moves to its
// daemon's directory with its package clause changed, an import of this
// package, and these names changed (the compiler names each one it
// meets: "has no field or method procs, but does have field Procs"):
//
//	binDir                      e2e.BinDir()
//	freePort, keyFile, exitCode e2e.FreePort, e2e.KeyFile, e2e.ExitCode
//	shortDirT, others, all      e2e.ShortDir, e2e.Others, e2e.All
//	authArgs, noSysTime         e2e.AuthArgs, e2e.NoSysTime
//	statusOf, statusJSON        e2e.StatusOf, e2e.StatusJSON
//	field, num, peerSeq         e2e.Field, e2e.Num, e2e.PeerSeq
//	tailString, leaderOf        e2e.TailString, e2e.LeaderOf
//	send, spoof, modes          e2e.Send, e2e.Spoof, e2e.Modes (m.Name, m.Keyed)
//	within, timedQueryJSON      e2e.Within, e2e.TimedQueryJSON
//	newAttackLab, attackLab     e2e.NewAttackLab, e2e.AttackLab
//	forEachSecurity, forged{}   e2e.ForEachSecurity, e2e.Forged{From:, To:, Kind:, Term:, Payload:}
//	attackLeaderTimeout         e2e.AttackLeaderTimeout (and RefuseWithin, InsecureFlags)
//	c.procs c.dir c.key ...     c.Procs c.Dir c.Key c.Members c.Extra c.Env c.Daemon c.T
//	c.start c.status c.alive    c.Start c.Status c.Alive c.StartAlone c.Control c.LogPath c.Eventually
//	a.t a.lab a.n a.procs ...   a.T a.Lab a.N a.Procs a.Dir a.Daemon a.Keyed a.Extra a.StateRoot
//	a.start a.forge a.refused   a.Start a.StartAll a.Status a.MustStatus a.Forge a.ForgeBurst
//	                            a.Refused a.WaitHeard a.Alive a.Eventually a.AgreedLeader a.Member
//	                            a.LeaderAmong a.AwaitLeader a.LamportOf
//	forged{1, 2, k, t, p, l}    e2e.Forged{From: 1, To: 2, Kind: k, Term: t, Payload: p, Lamport: l}
//	newAgreeLab, agreeLab       e2e.NewAgreeLab, e2e.AgreeLab (fields T Lab Dir Daemon Port Key Procs)
//	a.members a.start a.cli     a.Members a.Start a.CLI a.Status a.Control a.MemberView a.Standing
//	a.warned a.poll ...         a.Metrics a.Warned a.Quiet a.Poll a.CheckDisagreement a.Table
//	eventually(t, what, d, f)   a.Eventually(what, d, f) (on an AgreeLab)
//	clusterTable, tab.row       e2e.ClusterTable, tab.Row; wants, tableLine, fact: e2e.Wants,
//	                            e2e.TableLine, e2e.Fact
//
// A method a test defined on attackLab or agreeLab becomes a function
// taking *e2e.AttackLab or *e2e.AgreeLab (see spread in timedlab, lockCmd
// and lockAt in mutexd, leaders and noTwoLeaders in electd).
package e2e
