#!/usr/bin/env bash
# A real systemd system manager for agentctl's system-unit tests: boots a
# debootstrapped Debian with systemd-nspawn (its own root filesystem, so its
# boot units never touch the host), with a user `ci` (uid 1000) whose user
# manager runs from boot (lingering).
#
#   scripts/systemd-nspawn-harness.sh up           build the root once (about 90 s), boot (about 2 s)
#   scripts/systemd-nspawn-harness.sh install SRC DST
#                                                  copy a file into the container (mode 755)
#   scripts/systemd-nspawn-harness.sh run CMD...   run CMD as root inside
#   scripts/systemd-nspawn-harness.sh down         power it off and clean the host
#   scripts/systemd-nspawn-harness.sh purge        down, and delete the cached root
#
# Needs root and network access to Debian's package archive for the first
# build; installs debootstrap and systemd-container with apt-get when missing.
#
# Environment:
#   SYSTEMD_NSPAWN_DIR     cache for the root filesystem, pid files and logs
#                          (default /var/cache/agentctl-nspawn; not /tmp, so
#                          the root survives between runs)
#   SYSTEMD_NSPAWN_MIRROR  Debian archive URL for debootstrap (default: its own)
set -euo pipefail

dir=${SYSTEMD_NSPAWN_DIR:-/var/cache/agentctl-nspawn}
ct=$dir/ct
machine=agentctl-sdh
suite=bookworm

log() { printf 'systemd-nspawn-harness: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}
[ "$(id -u)" = 0 ] || die "must run as root"

cgroup_roots() {
	if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
		echo /sys/fs/cgroup
	else
		[ -d /sys/fs/cgroup/systemd ] && echo /sys/fs/cgroup/systemd
		[ -d /sys/fs/cgroup/unified ] && echo /sys/fs/cgroup/unified
	fi
	return 0
}

nspawn_pid() {
	local pid
	pid=$(cat "$dir/nspawn.pid" 2>/dev/null) || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

leader() {
	local pid
	pid=$(nspawn_pid) || return 1
	pgrep -P "$pid" | head -1
}

inside() {
	local l
	l=$(leader) || die "the container is not up"
	[ -n "$l" ] || die "the container has no leader process"
	nsenter --target "$l" --all -- "$@"
}

build_root() {
	if [ -x "$ct/lib/systemd/systemd" ] && [ -f "$ct/.agentctl-ready" ]; then
		return 0
	fi
	log "building the container root in $ct (debootstrap $suite)"
	rm -rf "$ct"
	mkdir -p "$dir"
	local t=$SECONDS
	# shellcheck disable=SC2086
	debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,libpam-systemd \
		"$suite" "$ct" ${SYSTEMD_NSPAWN_MIRROR:-} >"$dir/debootstrap.log" 2>&1 ||
		{
			tail -20 "$dir/debootstrap.log" >&2
			die "debootstrap failed"
		}
	echo "$machine" >"$ct/etc/hostname"
	rm -f "$ct/etc/machine-id"
	chroot "$ct" useradd --create-home --uid 1000 --shell /bin/bash ci
	mkdir -p "$ct/var/lib/systemd/linger"
	touch "$ct/var/lib/systemd/linger/ci"
	touch "$ct/.agentctl-ready"
	log "root built in $((SECONDS - t)) s"
}

cmd_up() {
	if nspawn_pid >/dev/null; then
		die "already up; run down first"
	fi
	if ! command -v systemd-nspawn >/dev/null || ! command -v debootstrap >/dev/null; then
		log "installing debootstrap and systemd-container with apt-get"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap systemd-container >/dev/null
	fi
	build_root
	local roots
	roots=$(cgroup_roots | tr '\n' ' ')
	cat >"$dir/launcher.sh" <<EOF
#!/bin/bash
# Runs nspawn from a cgroup of its own: --keep-unit makes it create its
# payload/supervisor cgroups wherever it starts.
for r in $roots; do mkdir -p "\$r/nspawn-harness"; echo \$\$ >"\$r/nspawn-harness/cgroup.procs"; done
exec systemd-nspawn --quiet --boot --directory="$ct" --machine=$machine --register=no \
	--keep-unit --console=passive --private-network
EOF
	chmod 700 "$dir/launcher.sh"
	setsid "$dir/launcher.sh" </dev/null >"$dir/nspawn.log" 2>&1 &
	echo $! >"$dir/nspawn.pid"
	local i l state="" user=""
	for i in $(seq 600); do
		nspawn_pid >/dev/null || {
			cat "$dir/nspawn.log" >&2
			die "systemd-nspawn exited while booting"
		}
		if l=$(leader) && [ -n "$l" ]; then
			state=$(nsenter --target "$l" --all -- systemctl is-system-running 2>/dev/null || true)
			user=$(nsenter --target "$l" --all -- systemctl is-active user@1000.service 2>/dev/null || true)
			case $state in running | degraded) [ "$user" = active ] && break ;; esac
		fi
		sleep 0.1
	done
	case $state in
	running | degraded) [ "$user" = active ] || die "user@1000.service is ${user:-unknown} after 60 s" ;;
	*)
		cat "$dir/nspawn.log" >&2
		die "the container did not boot within 60 s (state: ${state:-none})"
		;;
	esac
	log "up: machine $machine, leader pid $(leader), state $state"
}

cmd_down() {
	local pid i
	if pid=$(nspawn_pid); then
		inside systemctl poweroff --no-block >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 150); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$dir/nspawn.pid"
	local r
	for r in $(cgroup_roots); do
		[ -d "$r/nspawn-harness" ] || continue
		for pid in $(find "$r/nspawn-harness" -name cgroup.procs -exec cat {} + 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null || true
		done
		sleep 0.2
		find "$r/nspawn-harness" -depth -type d -exec rmdir {} + 2>/dev/null || true
	done
	rm -rf /run/systemd/nspawn
	log "down"
}

case ${1:-} in
up) cmd_up ;;
down) cmd_down ;;
purge)
	cmd_down
	rm -rf "$dir"
	;;
install)
	[ $# = 3 ] || die "usage: install SRC DST"
	install -D -m 755 "$2" "$ct$3"
	;;
run)
	shift
	inside "$@"
	;;
*)
	sed -n '2,20p' "$0" >&2
	exit 2
	;;
esac
