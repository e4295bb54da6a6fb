#!/usr/bin/env bash
# Runs every synclab test: vet, formatting, unit and simulation tests, and,
# as root, the lab tests in network namespaces (after installing what they
# need). As a normal user the lab tests skip and say why.
#
#   scripts/test.sh              everything
#   scripts/test.sh ./pkg/...    only these packages
#   scripts/test.sh --soak       a soak run (nightly): every seeded
#                                simulation over its soak count of seeds
#                                (SYNCLAB_SOAK=1; see internal/sim.Seeds)
set -euo pipefail
cd "$(dirname "$0")/.."

timeout=15m
if [ "${1:-}" = --soak ]; then
	shift
	export SYNCLAB_SOAK=1
	timeout=90m
fi

if [ "$(id -u)" = 0 ]; then
	scripts/install-test-deps.sh
elif [ "${CI:-}" = true ]; then
	echo "test.sh: CI=true but not root: the lab and root-only tests cannot run, and in CI they must; run as root (.ci/run does)" >&2
	exit 1
else
	echo "test.sh: not root: lab tests (network namespaces) will be skipped; run as root to include them" >&2
fi

pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)

echo "== go vet" >&2
go vet "${pkgs[@]}"

# The 32-bit targets: an int is 32 bits there (a constant beyond it does
# not compile, a uint32 field read into an int turns negative) and a
# system call's 64-bit argument takes two registers. Built and vetted
# only. To run a package's tests on one: `GOARCH=386 go test ./pkg/x`
# runs them on an amd64 kernel as they are; for arm, mips and mipsle
# build them (`GOARCH=arm GOARM=7 go test -c`) and run the binary under
# qemu-user (qemu-arm-static, qemu-mips-static, qemu-mipsel-static).
for arch in 386 arm mips mipsle; do
	echo "== go build, go vet: linux/$arch" >&2
	GOOS=linux GOARCH=$arch GOARM=7 go build "${pkgs[@]}"
	GOOS=linux GOARCH=$arch GOARM=7 go vet "${pkgs[@]}"
done
# On amd64 a wrong register split or a negative int(uint32) cannot show:
# the tests written for them run as 386 binaries, which an amd64 kernel
# with its 32-bit support runs natively (a second or two).
if [ "$(go env GOHOSTARCH)" = amd64 ] && [ ${#pkgs[@]} -eq 1 ] && [ "${pkgs[0]}" = ./... ]; then
	echo "== go test: linux/386, the 32-bit regressions" >&2
	probe=$(mktemp -d)
	printf 'package main\nfunc main() {}\n' >"$probe/main.go"
	if (cd "$probe" && GOOS=linux GOARCH=386 go build -o probe main.go 2>/dev/null && ./probe); then
		GOOS=linux GOARCH=386 go test -count=1 \
			-run 'TestWriteData|TestParseTx|TestTxTimestamps|TestEndpointTxTimestamps|TestDecodeErrorGotSaturates' \
			./internal/daemon ./internal/transport ./pkg/wire
	else
		echo "skipped: this kernel does not run 386 binaries (no IA32 emulation)" >&2
	fi
	rm -rf "$probe"
fi

echo "== gofmt" >&2
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "== go test" >&2
go test -count=1 -timeout "$timeout" "${pkgs[@]}"
