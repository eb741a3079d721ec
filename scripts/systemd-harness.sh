#!/usr/bin/env bash
# A real systemd user manager for agentctl's service tests on a machine whose
# PID 1 is not systemd (a container, a CI runner with its own init).
#
#   scripts/systemd-harness.sh up                  start it (about 1 s)
#   scripts/systemd-harness.sh run-user [VAR=VALUE...] CMD [ARGS...]
#                                                  run CMD as the test user, inside
#   scripts/systemd-harness.sh run-root [VAR=VALUE...] CMD [ARGS...]
#                                                  run CMD as root in its mount namespace
#   scripts/systemd-harness.sh down                stop it and remove everything it made
#   scripts/systemd-harness.sh info                print USER UID HOME MANAGER_PID
#
# How: `systemd --user` runs as a dedicated user inside a private mount
# namespace in which /run/systemd/system exists (so systemd, systemctl and
# agentctl believe the machine runs systemd), in a cgroup pre-created and
# delegated to that user as a system manager would. A journald in the same
# namespace keeps `journalctl --user` working. The host's own view of /run,
# /var/log/journal and /tmp is never changed; systemd never runs as PID 1.
#
# Needs root, systemd and util-linux (unshare, nsenter, setpriv); `up` installs
# systemd with apt-get when it is missing.
#
# Environment:
#   SYSTEMD_HARNESS_USER   the test user, created and removed (default agentctl-sdci)
#   SYSTEMD_HARNESS_STATE  root-only folder for pid files and logs
#                          (default /run/agentctl-systemd-harness)
set -euo pipefail

user=${SYSTEMD_HARNESS_USER:-agentctl-sdci}
state=${SYSTEMD_HARNESS_STATE:-/run/agentctl-systemd-harness}

log() { printf 'systemd-harness: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

[ "$(id -u)" = 0 ] || die "must run as root"

# cgroup_roots prints the cgroup hierarchies the user manager is delegated
# on this machine: those systemd uses and, on a hybrid host, the v1 memory,
# pids and cpu controllers its cgroup2 lacks (as a system manager delegates
# a user's slice), so agentctl's per-session limits work for the user.
cgroup_roots() {
	if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
		echo /sys/fs/cgroup
	else
		local c
		for c in systemd unified memory pids cpu; do
			[ -d "/sys/fs/cgroup/$c" ] && echo "/sys/fs/cgroup/$c"
		done
	fi
	return 0
}

user_ids() {
	uid=$(id -u "$user")
	gid=$(id -g "$user")
	home=$(getent passwd "$user" | cut -d: -f6)
	rt=/run/user/$uid
}

manager_pid() {
	local pid
	pid=$(cat "$state/manager.pid" 2>/dev/null) || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

# as_user CMD...: the test user's login-like environment inside the namespace.
as_user() {
	local mpid
	mpid=$(manager_pid) || die "the harness is not up"
	nsenter --target "$mpid" --mount -- setpriv --reuid="$uid" --regid="$gid" --init-groups \
		env -i HOME="$home" USER="$user" LOGNAME="$user" SHELL=/bin/bash \
		PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR="$rt" \
		DBUS_SESSION_BUS_ADDRESS="unix:path=$rt/bus" "$@"
}

cmd_up() {
	if manager_pid >/dev/null; then
		die "already up (manager pid $(manager_pid)); run down first"
	fi
	for tool in unshare nsenter setpriv useradd; do
		command -v "$tool" >/dev/null || die "$tool is required (util-linux, passwd)"
	done
	if [ ! -x /lib/systemd/systemd ] || ! command -v systemctl >/dev/null; then
		log "installing systemd with apt-get"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd >/dev/null
	fi
	id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
	user_ids
	install -d -m 700 -o "$uid" -g "$gid" "$rt"
	install -d -m 700 "$state"
	rm -f "$state"/*.pid

	local cg_dirs=() root
	while read -r root; do
		local d=$root/user.slice/user-$uid.slice/user@$uid.service
		mkdir -p "$d"
		chown -R "$uid:$gid" "$d"
		cg_dirs+=("$d")
		if [ "$root" = /sys/fs/cgroup ]; then
			# Pure cgroup2: delegate every controller down to the manager.
			local c p
			for p in "$root" "$root/user.slice" "$root/user.slice/user-$uid.slice"; do
				for c in $(cat "$root/cgroup.controllers"); do
					echo "+$c" >"$p/cgroup.subtree_control" 2>/dev/null || true
				done
			done
		fi
	done < <(cgroup_roots)
	[ ${#cg_dirs[@]} -gt 0 ] || die "no cgroup hierarchy found under /sys/fs/cgroup"
	printf '%s\n' "${cg_dirs[@]}" >"$state/cgroups"
	mkdir -p /var/log/journal

	local journal_gid
	journal_gid=$(getent group systemd-journal | cut -d: -f3 || true)
	cat >"$state/launcher.sh" <<EOF
#!/bin/bash
# Runs in the harness's private mount namespace, as root; becomes the manager.
set -e
for d in ${cg_dirs[*]}; do echo \$\$ >"\$d/cgroup.procs"; done
mount -t tmpfs -o mode=755 tmpfs /run/systemd
mkdir -p /run/systemd/system /run/systemd/journal
mount -t tmpfs -o mode=2755${journal_gid:+,gid=$journal_gid} tmpfs /var/log/journal
mount -t tmpfs -o mode=755 tmpfs /run/log
# journald writes per-user journals straight to /var/log/journal when it
# believes the flush already happened.
touch /run/systemd/journal/flushed
for r in $(cgroup_roots | tr '\n' ' '); do echo \$\$ >"\$r/cgroup.procs"; done
/lib/systemd/systemd-journald </dev/null >"$state/journald.log" 2>&1 &
echo \$! >"$state/journald.pid"
for d in ${cg_dirs[*]}; do echo \$\$ >"\$d/cgroup.procs"; done
for _ in \$(seq 100); do [ -S /run/systemd/journal/stdout ] && break; sleep 0.05; done
echo \$\$ >"$state/manager.pid"
exec setpriv --reuid=$uid --regid=$gid --init-groups env -i HOME=$home USER=$user LOGNAME=$user \
	XDG_RUNTIME_DIR=$rt PATH=/usr/local/bin:/usr/bin:/bin /lib/systemd/systemd --user
EOF
	chmod 700 "$state/launcher.sh"
	setsid unshare --mount --propagation private "$state/launcher.sh" </dev/null >"$state/manager.log" 2>&1 &
	local launcher=$! i out=""
	for i in $(seq 200); do
		if ! kill -0 "$launcher" 2>/dev/null; then
			cat "$state/manager.log" >&2 || true
			die "the user manager exited while starting"
		fi
		if [ -S "$rt/systemd/private" ] && manager_pid >/dev/null; then
			out=$(as_user systemctl --user is-system-running 2>/dev/null || true)
			case $out in running | degraded) break ;; esac
		fi
		sleep 0.1
	done
	case $out in
	running | degraded) log "up: user $user (uid $uid), manager pid $(manager_pid), state $out" ;;
	*)
		cat "$state/manager.log" >&2 || true
		die "the user manager did not reach running within 20 s (state: ${out:-none})"
		;;
	esac
}

# wait_gone PID SECONDS: whether PID exits within SECONDS.
wait_gone() {
	local i
	for i in $(seq $(($2 * 10))); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

cmd_down() {
	if ! id "$user" >/dev/null 2>&1; then
		rm -rf "$state"
		return 0
	fi
	user_ids
	local mpid jpid
	if mpid=$(manager_pid); then
		as_user systemctl --user exit >/dev/null 2>&1 || kill -TERM "$mpid" 2>/dev/null || true
		wait_gone "$mpid" 10 || kill -KILL "$mpid" 2>/dev/null || true
	fi
	if jpid=$(cat "$state/journald.pid" 2>/dev/null) && kill -0 "$jpid" 2>/dev/null; then
		kill -TERM "$jpid" 2>/dev/null || true
		wait_gone "$jpid" 5 || kill -KILL "$jpid" 2>/dev/null || true
	fi
	# Whatever outlived the manager (KillMode=process leaves session
	# monitors and agents behind by design) is the test user's: end it.
	local d pid root
	if [ -f "$state/cgroups" ]; then
		while read -r d; do
			[ -d "$d" ] || continue
			for pid in $(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null); do
				kill -KILL "$pid" 2>/dev/null || true
			done
		done <"$state/cgroups"
	fi
	for pid in $(pgrep -u "$uid" 2>/dev/null || true); do
		kill -KILL "$pid" 2>/dev/null || true
	done
	sleep 0.2
	while read -r root; do
		d=$root/user.slice/user-$uid.slice
		[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
		rmdir "$root/user.slice" 2>/dev/null || true
	done < <(cgroup_roots)
	rm -rf "$rt" "$state"
	userdel --remove "$user" 2>/dev/null || true
	log "down"
}

case ${1:-} in
up) cmd_up ;;
down) cmd_down ;;
run-user)
	shift
	user_ids
	as_user "$@"
	;;
run-root)
	shift
	mpid=$(manager_pid) || die "the harness is not up"
	user_ids
	nsenter --target "$mpid" --mount -- env XDG_RUNTIME_DIR="$rt" "$@"
	;;
info)
	user_ids
	echo "$user $uid $home $(manager_pid || echo -)"
	;;
*)
	sed -n '2,13p' "$0" >&2
	exit 2
	;;
esac
