#!/usr/bin/env bash
# Installs the Debian packages the lab tests need (network namespaces,
# nftables, reference NTP implementations; chromium for the diagram page's
# browser test; lintian for the Debian package's test), as root, without
# starting any service they ship: a chronyd started by its package would
# reach public servers and move the real clock.
set -euo pipefail

packages=(iproute2 nftables chrony ntpsec-ntpdate chromium lintian)

# ntpsec's ntpd is a reference too, but its package conflicts with chrony
# (both provide time-daemon: installing one removes the other) and ships a
# service. So it is never installed: its .deb is downloaded and unpacked
# here, and the lab tests run this ntpd without CAP_SYS_TIME, with
# "disable ntp" (it never disciplines the clock) on namespace LANs only.
ntpsec_dir=/var/cache/synclab-test/ntpsec

fetch_ntpd() {
	[ -x "$ntpsec_dir/usr/sbin/ntpd" ] && return 0
	local tmp
	tmp=$(mktemp -d)
	# apt-get download writes to the current directory; _apt cannot
	# write to a root-only temp dir, so it is made readable to it.
	chmod 755 "$tmp"
	if (cd "$tmp" && apt-get download -qq ntpsec >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get download -qq ntpsec >/dev/null; }); then
		mkdir -p "$ntpsec_dir"
		dpkg-deb -x "$tmp"/ntpsec_*.deb "$ntpsec_dir"
		echo "install-test-deps: unpacked ntpsec's ntpd in $ntpsec_dir (not installed: no service)" >&2
	else
		echo "install-test-deps: could not download ntpsec; the ntpd interop test will skip" >&2
	fi
	rm -rf "$tmp"
}

if [ "$(id -u)" != 0 ]; then
	echo "install-test-deps: not root; skipping package installation (lab tests will skip)" >&2
	exit 0
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	fetch_ntpd
	exit 0
fi

# Our guard goes in even over an existing one, which might allow starts:
# that one is kept aside and put back at exit.
guard=/usr/sbin/policy-rc.d
saved_guard=""
if [ -e "$guard" ]; then
	saved_guard=$(mktemp "$guard.synclab.XXXXXX")
	cp -p "$guard" "$saved_guard" || { rm -f "$saved_guard"; exit 1; }
fi
cleanup() {
	if [ -n "$saved_guard" ]; then
		mv -f "$saved_guard" "$guard"
	else
		rm -f "$guard"
	fi
}
trap cleanup EXIT
printf '#!/bin/sh\n# synclab: never start services while installing test dependencies\nexit 101\n' >"$guard.new"
chmod 755 "$guard.new"
mv -f "$guard.new" "$guard"

echo "install-test-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || apt-get update
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

# The package also enables its service for the next boot: a test dependency
# must not become a chronyd that sets the clock after a reboot.
for p in "${missing[@]}"; do
	if [ "$p" = chrony ] && command -v systemctl >/dev/null; then
		systemctl disable --quiet chrony.service 2>/dev/null || true
	fi
done
fetch_ntpd
