#!/usr/bin/env bash
# install.sh: install synclab's daemons on this host, or remove them.
#
#   scripts/install.sh [install] [options]     binaries, units, examples, man pages, completions
#   scripts/install.sh uninstall [options]     remove what install put there
#
# Options:
#   --prefix DIR     where binaries (DIR/bin), man pages (DIR/share/man/man8),
#                    completions (DIR/share/bash-completion, DIR/share/zsh) and
#                    the example environment files (DIR/share/doc/synclab) go;
#                    default /usr/local. The installed units' ExecStart= follows it.
#   --dest DIR       stage everything under DIR instead of / (like DESTDIR): for
#                    packaging and tests, no root needed
#   --only LIST      only these daemons, e.g. --only timed,electd (default: all four)
#   --bin-dir DIR    install the prebuilt binaries DIR/timed... instead of building
#                    them with `go build` (install only)
#   --dry-run        print every action, change nothing
#   --purge          uninstall: also remove /etc/default/X, the state in
#                    /var/lib/X, and (of all four) /etc/default/synclab, the
#                    lab file and the cluster key (kept otherwise)
#
# The unit files go to /etc/systemd/system (with timed, timed-wait.service
# too: enabled, it holds time-sync.target until timed has synchronised the
# clock, and mutexd, electd and orderd start after it). /etc/default/X and
# /etc/default/synclab are written only when they do not exist, every line
# commented out: an admin's configuration is never overwritten (the current
# examples are always in DIR/share/doc/synclab to compare with). The lab
# itself is described in the lab file, /etc/synclab/lab.toml, which install
# never writes: its example, lab.toml.example, goes beside the others.
# Running install twice changes nothing the second time, and says so.
#
# The cluster key, /etc/synclab/cluster.key, which the units hand to the
# daemons: install never makes one, since a lab needs ONE key, the same file
# on every member. Make it on the first machine only (`timed keygen`, mode
# 0600) and copy that file to the others (scp -p); install says so while the
# key is missing. An existing key is never touched; uninstall keeps it
# unless --purge (of all four daemons).
#
# This script never starts, stops, enables or disables a service: it prints
# the systemctl line for the admin to run. uninstall refuses to remove a
# daemon whose service is enabled or running on this host.
set -euo pipefail

all=(timed mutexd electd orderd)
repo=$(cd "$(dirname "$0")/.." && pwd)
me=install.sh

# die reports a usage error (exit 2), fail anything else (exit 1).
die() {
	printf '%s: %s\n' "$me" "$*" >&2
	exit 2
}
fail() {
	printf '%s: %s\n' "$me" "$*" >&2
	exit 1
}

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
}

action=install
prefix=/usr/local
dest=
only=
bindir=
dry=0
purge=0
while [ $# -gt 0 ]; do
	arg=$1
	shift
	val=
	case $arg in
	--*=*) val=${arg#*=} arg=${arg%%=*} ;;
	esac
	case $arg in
	--prefix | --dest | --only | --bin-dir)
		if [ -z "$val" ]; then
			[ $# -gt 0 ] || die "$arg needs a value (see $me --help)"
			val=$1
			shift
		fi
		case $arg in
		--prefix) prefix=$val ;;
		--dest) dest=$val ;;
		--only) only=$val ;;
		--bin-dir) bindir=$val ;;
		esac
		;;
	--dry-run) dry=1 ;;
	--purge) purge=1 ;;
	-h | --help)
		usage
		exit 0
		;;
	install | uninstall) action=$arg ;;
	*) die "unknown argument '$arg' (see $me --help)" ;;
	esac
done

# The prefix is written into unit files and sed expressions: plain paths only.
[[ $prefix =~ ^/[A-Za-z0-9._/+-]*$ ]] || die "--prefix '$prefix': want an absolute path of letters, digits and ._+-/"
prefix=${prefix%/}
[ -n "$prefix" ] || die "--prefix /: binaries would go to /bin; use --prefix /usr"
if [ -n "$dest" ]; then
	case $dest in /*) ;; *) dest=$PWD/$dest ;; esac
	dest=${dest%/}
fi
[ "$purge" = 0 ] || [ "$action" = uninstall ] || die "--purge is for uninstall"
[ -z "$bindir" ] || [ "$action" = install ] || die "--bin-dir is for install"

daemons=()
if [ -n "$only" ]; then
	IFS=, read -r -a wanted <<<"$only"
	for d in "${wanted[@]}"; do
		[ -n "$d" ] || continue
		case " ${all[*]} " in
		*" $d "*) ;;
		*) die "--only: unknown daemon '$d' (want some of: ${all[*]})" ;;
		esac
		case " ${daemons[*]-} " in *" $d "*) continue ;; esac
		daemons+=("$d")
	done
	[ ${#daemons[@]} -gt 0 ] || die "--only: name at least one of: ${all[*]}"
else
	daemons=("${all[@]}")
fi

if [ -z "$dest" ] && [ "$dry" = 0 ] && [ "$(id -u)" != 0 ]; then
	die "installing on this host needs root: run it with sudo, or stage it with --dest DIR, or look first with --dry-run"
fi

# Where each file goes, as the host will see it (without --dest).
bin_path() { echo "$prefix/bin/$1"; }
unit_path() { echo "/etc/systemd/system/$1.service"; }
env_path() { echo "/etc/default/$1"; }
example_path() { echo "$prefix/share/doc/synclab/$1.env.example"; }
lab_example_path() { echo "$prefix/share/doc/synclab/lab.toml.example"; }
man_path() { echo "$prefix/share/man/man8/$1.8"; }
bash_path() { echo "$prefix/share/bash-completion/completions/$1"; }
zsh_path() { echo "$prefix/share/zsh/site-functions/_$1"; }
key_path=/etc/synclab/cluster.key
lab_path=/etc/synclab/lab.toml

say() { printf '%s\n' "$*"; }

# files N says "1 file" or "N files".
files() {
	if [ "$1" = 1 ]; then echo "1 file"; else echo "$1 files"; fi
}

changed=0
same=0
declare -A planned # directories a dry run has said it would create

# put SRC PATH MODE WHAT installs SRC as $dest/PATH with MODE, atomically,
# unless an identical file with that mode is already there. WHAT says where
# the file comes from.
put() {
	local src=$1 dst=$dest$2 mode=$3 what=$4
	if [ -f "$dst" ] && cmp -s "$src" "$dst" && [ "$(stat -c %a "$dst")" = "${mode#0}" ]; then
		same=$((same + 1))
		return
	fi
	changed=$((changed + 1))
	local dir
	dir=$(dirname "$dst")
	if [ "$dry" = 1 ]; then
		if [ ! -d "$dir" ] && [ -z "${planned[$dir]-}" ]; then
			planned[$dir]=1
			say "would create $dir/"
		fi
		say "would install $dst ($mode; $what)"
		return
	fi
	if [ ! -d "$dir" ]; then
		install -d -m 0755 "$dir"
		say "created $dir/"
	fi
	# A running binary cannot be written over (ETXTBSY), and a reader must
	# never see half a file: write beside it, then rename.
	install -m "$mode" "$src" "$dst.synclab-new"
	mv -f "$dst.synclab-new" "$dst"
	say "installed $dst ($mode; $what)"
}

# service_active says whether this host's systemd has unit $1 enabled or
# running. Only asked about the real host (no --dest), and only where
# systemd is the init system.
service_active() {
	[ -z "$dest" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null || return 1
	systemctl is-enabled --quiet "$1.service" 2>/dev/null || systemctl is-active --quiet "$1.service" 2>/dev/null
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/synclab-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

do_install() {
	local d bin
	if [ -n "$bindir" ]; then
		for d in "${daemons[@]}"; do
			{ [ -x "$bindir/$d" ] && [ -f "$bindir/$d" ]; } || die "--bin-dir $bindir: no executable $d there (build it: go build -o $bindir ./cmd/$d)"
		done
	else
		command -v go >/dev/null || fail "go is not installed: install Go 1.26, or pass prebuilt binaries with --bin-dir DIR"
		local pkgs=()
		for d in "${daemons[@]}"; do pkgs+=("./cmd/$d"); done
		# -trimpath: the same source builds the same bytes wherever it lies,
		# so that a second install finds nothing to replace.
		say "building ${daemons[*]} (go build -trimpath, in $repo)"
		# Static binaries (no cgo): nothing to resolve at start, no libc
		# mapped into every daemon (1.5 MB of its resident set).
		# The commit goes into the binaries (`X version`, `X status`, the
		# synclab_build_info metric); "unknown" outside a git checkout.
		local commit
		commit=$(git -C "$repo" describe --always --dirty --abbrev=12 2>/dev/null) || commit=unknown
		(cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags "-X github.com/synclab/synclab/internal/app.Commit=$commit" -o "$tmp/" "${pkgs[@]}") || fail "go build failed: see the errors above"
		bindir=$tmp
	fi

	mkdir -p "$tmp/stage"
	local created_env=()
	for d in "${daemons[@]}"; do
		bin=$bindir/$d
		local s=$tmp/stage/$d
		mkdir -p "$s"
		local unit=$repo/systemd/$d.service
		grep -qx "ExecStart=/usr/local/bin/$d run" "$unit" ||
			fail "$unit: no line 'ExecStart=/usr/local/bin/$d run', which --prefix rewrites; fix the unit or this script"
		sed "s#/usr/local/bin/#$prefix/bin/#g" "$unit" >"$s/unit"
		"$bin" man >"$s/man" || fail "$bin man failed: is it a synclab $d binary?"
		"$bin" completion bash >"$s/bash" || fail "$bin completion bash failed"
		"$bin" completion zsh >"$s/zsh" || fail "$bin completion zsh failed"

		put "$bin" "$(bin_path "$d")" 0755 "$bin"
		put "$s/unit" "$(unit_path "$d")" 0644 "systemd/$d.service, ExecStart=$(bin_path "$d") run"
		put "$repo/systemd/$d.env.example" "$(example_path "$d")" 0644 "systemd/$d.env.example"
		put "$s/man" "$(man_path "$d")" 0644 "$d man"
		put "$s/bash" "$(bash_path "$d")" 0644 "$d completion bash"
		put "$s/zsh" "$(zsh_path "$d")" 0644 "$d completion zsh"
		if [ -e "$dest$(env_path "$d")" ]; then
			say "kept $dest$(env_path "$d"): an admin's configuration is never overwritten (the current example: $(example_path "$d"))"
		else
			put "$repo/systemd/$d.env.example" "$(env_path "$d")" 0644 "systemd/$d.env.example"
			created_env+=("$(env_path "$d")")
		fi
	done

	# What the four share: the lab file's example, /etc/default/synclab
	# (what this machine says to all of them), and with timed its wait
	# unit.
	put "$repo/systemd/lab.toml.example" "$(lab_example_path)" 0644 "systemd/lab.toml.example"
	put "$repo/systemd/synclab.env.example" "$(example_path synclab)" 0644 "systemd/synclab.env.example"
	if [ -e "$dest$(env_path synclab)" ]; then
		say "kept $dest$(env_path synclab): an admin's configuration is never overwritten (the current example: $(example_path synclab))"
	else
		put "$repo/systemd/synclab.env.example" "$(env_path synclab)" 0644 "systemd/synclab.env.example"
		created_env+=("$(env_path synclab)")
	fi
	case " ${daemons[*]} " in
	*" timed "*)
		local wait=$repo/systemd/timed-wait.service
		grep -qx "ExecStart=/usr/local/bin/timed waitsync --max-error 100ms" "$wait" ||
			fail "$wait: no line 'ExecStart=/usr/local/bin/timed waitsync --max-error 100ms', which --prefix rewrites; fix the unit or this script"
		sed "s#/usr/local/bin/#$prefix/bin/#g" "$wait" >"$tmp/stage/timed-wait.service"
		put "$tmp/stage/timed-wait.service" "$(unit_path timed-wait)" 0644 "systemd/timed-wait.service, ExecStart=$(bin_path timed) waitsync"
		;;
	esac

	# One key for the lab: never made here (a key per machine would keep
	# the members from hearing each other).
	local key_missing=0
	if [ -e "$dest$key_path" ]; then
		say "kept $dest$key_path: the cluster key is never replaced"
	else
		key_missing=1
	fi

	say ""
	if [ "$changed" = 0 ]; then
		say "Nothing to do: ${daemons[*]} already installed ($(files "$same") up to date)."
	elif [ "$dry" = 1 ]; then
		say "Dry run: $(files "$changed") would be installed, $same up to date; nothing was changed."
	else
		say "Installed $(files "$changed") ($same up to date)${dest:+ under $dest}."
	fi
	if [ -e "$dest$lab_path" ]; then
		say "The lab file is there: $dest$lab_path (kept; every daemon reads it)."
	else
		say "Describe the lab once, in $lab_path (the example: $(lab_example_path)): its machines with their IDs"
		say "and addresses, each daemon's port and settings. Write it on one machine, then copy it and the key to"
		say "every other: scp -p $lab_path $key_path HOST:/etc/synclab/"
	fi
	if [ ${#created_env[@]} -gt 0 ]; then
		say "${created_env[*]}: every line commented out; set a variable there only to override the lab file on this machine."
	fi
	if [ "$key_missing" = 1 ]; then
		say "No cluster key here yet ($key_path): the units do not start without it."
		say "On the FIRST machine of the lab only: ${daemons[0]} keygen (it writes $key_path, mode 0600);"
		say "then copy that one file to every other machine: scp -p $key_path root@HOST:$key_path"
	fi
	say "This script starts and enables nothing. When the configuration is ready:"
	say "    systemctl daemon-reload && systemctl enable --now ${daemons[*]}"
	case " ${daemons[*]} " in
	*" timed "*) say "and, for mutexd, electd and orderd to start on a synchronised clock: systemctl enable timed-wait" ;;
	esac
	if [ "$changed" != 0 ]; then
		say "A daemon that was already running keeps its old binary until: systemctl restart <daemon>"
	fi
}

# remove PATH deletes $dest/PATH (a directory with what is in it) if it is
# there.
remove() {
	local p=$dest$1
	[ -e "$p" ] || [ -L "$p" ] || return 0
	changed=$((changed + 1))
	if [ "$dry" = 1 ]; then
		say "would remove $p"
	else
		rm -rf "$p"
		say "removed $p"
	fi
}

do_uninstall() {
	local d
	for d in "${daemons[@]}"; do
		if service_active "$d"; then
			if [ "$dry" = 1 ]; then
				say "note: $d.service is enabled or running: the real uninstall will refuse until: systemctl disable --now $d"
			else
				fail "$d.service is enabled or running: run 'systemctl disable --now $d' first (this script never stops services)"
			fi
		fi
	done
	for d in "${daemons[@]}"; do
		remove "$(bin_path "$d")"
		# The unit's place does not depend on --prefix, its ExecStart does:
		# a unit of another prefix's install is not this one's to remove.
		local unit
		unit=$dest$(unit_path "$d")
		if [ -f "$unit" ] && ! grep -qx "ExecStart=$(bin_path "$d") run" "$unit"; then
			say "kept $unit: its ExecStart is not $(bin_path "$d") run (installed with another --prefix?)"
		else
			remove "$(unit_path "$d")"
		fi
		remove "$(example_path "$d")"
		remove "$(man_path "$d")"
		remove "$(bash_path "$d")"
		remove "$(zsh_path "$d")"
		# The state lives in /var/lib/private/X under DynamicUser=, reached
		# through the link /var/lib/X.
		local p
		for p in "$(env_path "$d")" "/var/lib/$d" "/var/lib/private/$d"; do
			if [ "$purge" = 1 ]; then
				remove "$p"
			elif [ -e "$dest$p" ]; then
				say "kept $dest$p (--purge removes it)"
			fi
		done
		if [ -d "$dest$(unit_path "$d").d" ]; then
			say "kept $dest$(unit_path "$d").d: drop-ins are the admin's"
		fi
	done
	case " ${daemons[*]} " in
	*" timed "*)
		local wait
		wait=$dest$(unit_path timed-wait)
		if [ -f "$wait" ] && ! grep -qx "ExecStart=$(bin_path timed) waitsync --max-error 100ms" "$wait"; then
			say "kept $wait: its ExecStart is not $(bin_path timed) waitsync (installed with another --prefix, or edited)"
		else
			remove "$(unit_path timed-wait)"
		fi
		;;
	esac
	# What the four share goes with the last of them; the lab file and
	# /etc/default/synclab only with a purge of all four, as the key.
	if [ ${#daemons[@]} = ${#all[@]} ]; then
		remove "$(lab_example_path)"
		remove "$(example_path synclab)"
	fi
	if [ "$purge" = 1 ] && [ ${#daemons[@]} = ${#all[@]} ]; then
		remove "$(env_path synclab)"
		remove "$lab_path"
	else
		for p in "$(env_path synclab)" "$lab_path"; do
			if [ -e "$dest$p" ]; then
				say "kept $dest$p (uninstall --purge of all four daemons removes it)"
			fi
		done
	fi
	# The key is the cluster's, not one daemon's: only a purge of all
	# four takes it.
	if [ "$purge" = 1 ] && [ ${#daemons[@]} = ${#all[@]} ]; then
		remove "$key_path"
		if [ "$dry" = 0 ] && [ -d "$dest${key_path%/*}" ]; then
			rmdir "$dest${key_path%/*}" 2>/dev/null || true
		fi
	elif [ -e "$dest$key_path" ]; then
		say "kept $dest$key_path (the cluster key; uninstall --purge of all four daemons removes it)"
	fi
	say ""
	if [ "$changed" = 0 ]; then
		say "Nothing to do: ${daemons[*]} not installed here${dest:+ (under $dest)}."
	elif [ "$dry" = 1 ]; then
		say "Dry run: $(files "$changed") would be removed; nothing was changed."
	else
		say "Removed $(files "$changed")${dest:+ under $dest}. Then: systemctl daemon-reload"
	fi
}

"do_$action"
