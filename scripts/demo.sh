#!/usr/bin/env bash
# A synclab lab on this one machine, no root needed: five hosts on loopback
# addresses (127.77.R.11-15; as root, network namespaces on one bridge,
# 10.77.0.1-5, unless -hosts loopback), each running timed (Berkeley, on a
# simulated clock up to 200 ms off), mutexd and electd, plus a sixth
# following host 1's NTP server. It shows the clocks converging (and plots
# them), the shared counter of the course notes with and without `mutexd
# lock`, and the leader killed with SIGKILL and replaced within a fraction
# of a second; each act (a Berkeley round, a lock handoff, the bully
# failover) is traced on every host (`X trace start/stop`) and drawn as a
# space-time diagram (SVG and HTML). Then it stops everything it started and
# removes its files (and namespaces); the chart and diagrams stay.
#
#   scripts/demo.sh [-short] [-hosts auto|loopback|netns] [-keep] [-plot FILE] [-diagrams DIR]
#
#   -short      the short form (about 30 s), as CI runs it
#   -hosts      loopback addresses, network namespaces (root), or auto:
#               namespaces when root, ip and nft allow
#   -keep       leave the lab running until Enter
#   -plot FILE  the chart of the clocks (default synclab-demo-clocks.svg)
#   -diagrams DIR  the acts' diagrams and traces (default synclab-demo-diagrams)
set -euo pipefail
cd "$(dirname "$0")/.."

bin=$(mktemp -d /tmp/synclab-demo-bin.XXXXXX)
trap 'rm -rf "$bin"' EXIT
echo "== building timed, mutexd and electd"
go build -o "$bin/" ./cmd/timed ./cmd/mutexd ./cmd/electd
go build -o "$bin/demo" ./internal/demo
"$bin/demo" -bin "$bin" "$@"
