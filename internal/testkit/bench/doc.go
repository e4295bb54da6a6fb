// Package bench measures the synclab daemons against reference systems on
// an emulated LAN and prints the figures side by side, with the project's
// targets next to them. It is not part of the pass/fail tests: the
// measurements run only when scripts/bench.sh asks for them.
//
// # What runs where
//
// The measuring code lives in this package's benchmark functions because the
// lab harness (package labnet) is built on testing.TB: a lab is torn down by
// the cleanups of the benchmark that built it, whether it finished, failed
// or was interrupted. The package's ordinary files hold what does not need
// a lab (percentiles, /proc readers, etcdctl output parsers, the report
// table) and are unit tested by a plain `go test ./internal/bench/`.
//
// scripts/bench.sh builds the daemons and this package's test binary, then
// runs one benchmark with its flags:
//
//	scripts/bench.sh elect --trials 20 --idle 10m
//	  -> bench.test -test.run '^$' -test.bench '^BenchmarkElect$' -test.benchtime 1x \
//	       -elect -elect.bin DIR -elect.trials 20 -elect.idle 10m ...
//
// Without -elect (for example under `go test -bench . ./...`) BenchmarkElect
// skips and says how to run it, so a 15-minute measurement never starts by
// accident; without root it skips like every lab test.
//
// # BenchmarkElect: electd against etcd
//
// One lab of six namespace hosts. Hosts 1 to 5 run an electd member and an
// etcd campaigner each; host 6 runs a single-node etcd 3.4 server and an
// `etcdctl elect --listen` observer:
//
//	 h1        h2        h3        h4        h5            h6
//	electd-1  electd-2  electd-3  electd-4  electd-5      etcd (10.77.0.6:2379)
//	client-1  client-2  client-3  client-4  client-5      observer
//	   |         |         |         |         |             |
//	   +---------+---------+----br0 (nftables loss)----------+
//
// The phases, in order, each starting what it needs and stopping it after:
//
//  1. electd failover, for each configuration (default flags over unicast;
//     default flags with multicast heartbeats on eth0; optionally extra
//     flags): the cluster settles on leader 5, idle traffic is measured
//     over a window, then each trial SIGKILLs the leader and waits until
//     every survivor reports the same new leader. The failover time is the
//     latest of the survivors' "since" instants (the daemon's own arrival
//     time of the COORDINATOR that taught it the new leader, as `electd
//     leader --json` shows it) minus the instant of the SIGKILL; the time at
//     which polling the survivors first saw agreement is printed as an
//     upper bound. Each kill waits a random 0-2 s first, so that it lands
//     at a uniformly random phase of the leader's heartbeats (the loop's
//     own rhythm would otherwise always kill at the same phase). Frames by
//     kind are summed over the survivors between the kill and agreement:
//     the messages of one election. The killed node is restarted and the
//     cluster settles again before the next trial.
//  2. etcd failover: each client grants itself a lease of etcd's minimum
//     TTL (2 s), runs `etcdctl lease keep-alive` (the process that is
//     SIGKILLed) and puts its proposal under the election prefix with that
//     lease, which is exactly what etcd's election recipe does when it
//     campaigns (`etcdctl elect` itself cannot: its session TTL is fixed at
//     60 s). The observer reports the leader (the oldest key) as etcd's own
//     Observe does; a trial is the time from the SIGKILL of the leading
//     client until the observer prints another leader, the kill again at a
//     random phase of the keep-alives.
//  3. Idle with loss: both electd configurations and the five etcd clients
//     run at once while every host (etcd's included) drops the given share
//     of IP packets in each direction; elections started, leader changes and
//     lost leases are counted.
//
// RSS is VmRSS from /proc/PID/status at the end of each phase; interface
// traffic is read from /proc/PID/net/dev, which shows the counters of the
// process's own network namespace.
//
// # BenchmarkMutex: mutexd against etcd's lock
//
// mutexd on hosts 1 to 5, etcd on host 6 with its clients on that host's
// 127.0.0.1 (etcd's best case); the etcd side calls the v3lock service
// (the concurrency.Mutex recipe, run by the server) through etcd's JSON
// gateway with plain net/http, and `etcdctl lock` for the CLI. Phases:
// uncontended latency through the APIs and the CLIs, contended handoffs
// with clients spread over the hosts, idle traffic, recovery after a
// SIGKILL of the holder. BenchmarkMutex's comment has the details
// (scripts/bench.sh mutex runs it).
package bench
