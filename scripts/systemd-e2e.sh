#!/usr/bin/env bash
# Proves `agentctl service` on a real systemd, in two tiers, and prints a
# summary with durations:
#   1. user units: the harness of scripts/systemd-harness.sh (a systemd user
#      manager in a private mount namespace, for a throwaway user) runs the
#      service package's tests and the end-to-end tests of e2e/systemd as
#      that user (about 30 s);
#   2. system units, and user units under a user@.service started by a real
#      system manager: the Debian container of
#      scripts/systemd-nspawn-harness.sh (its root is built once, about 90 to
#      200 s, and cached in SYSTEMD_NSPAWN_DIR; a boot takes about 2 s).
#      SYSTEMD_E2E_NSPAWN=0 skips this tier.
#
#   scripts/systemd-e2e.sh
#
# Needs root and Go; installs systemd, util-linux, debootstrap and
# systemd-container with apt-get when they are missing. Exits non-zero when
# any check fails. Bounded: each test binary gets SYSTEMD_E2E_TIMEOUT seconds
# (default 300); the harnesses bound their own start and stop.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo"
harness=$repo/scripts/systemd-harness.sh
nspawn=$repo/scripts/systemd-nspawn-harness.sh
limit=${SYSTEMD_E2E_TIMEOUT:-300}
start=$(date +%s.%N)

log() { printf 'systemd-e2e: %s\n' "$*" >&2; }
since() { printf '%.1f' "$(echo "$(date +%s.%N) - $1" | bc)"; }

[ "$(id -u)" = 0 ] || {
	log "must run as root (it creates a user and a cgroup for the harness)"
	exit 1
}

need=()
[ -x /lib/systemd/systemd ] && command -v systemctl >/dev/null || need+=(systemd)
command -v journalctl >/dev/null || need+=(systemd)
for tool in unshare nsenter setpriv; do command -v "$tool" >/dev/null || need+=(util-linux); done
command -v useradd >/dev/null || need+=(passwd)
command -v bc >/dev/null || need+=(bc)
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]} with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
fi

# The binaries run as the harness user: build them where it can read them.
work=$(mktemp -d /tmp/agentctl-systemd-e2e.XXXXXX)
chmod 755 "$work"
cleanup() {
	"$harness" down || true
	[ "${SYSTEMD_E2E_NSPAWN:-1}" = 0 ] || "$nspawn" down || true
	rm -rf "$work"
}
trap cleanup EXIT

t=$(date +%s.%N)
# Static, so the same binaries run in the container.
export CGO_ENABLED=0
go build -o "$work/agentctl" ./cmd/agentctl
go test -c -o "$work/service.test" ./service
go test -c -o "$work/systemd.test" ./e2e/systemd
chmod 755 "$work"/*
build_s=$(since "$t")
if ! "$work/agentctl" service --help >/dev/null 2>&1; then
	log "the agentctl binary has no 'service' command (newServiceCmd is not on the root command)"
	exit 1
fi

# A harness left over by an interrupted run goes first.
"$harness" down >/dev/null 2>&1 || true
t=$(date +%s.%N)
timeout 60 "$harness" up
up_s=$(since "$t")

results=()
passed=0
failed=0
# check NAME BINARY ARGS...: run a test binary as the harness user.
check() {
	local name=$1 t rc=0
	shift
	t=$(date +%s.%N)
	# The harness delegates a memory controller to the user's manager:
	# the OOM test must find one.
	timeout --kill-after=10 "$limit" "$harness" run-user AGENTCTL_SYSTEMD_TEST=1 AGENTCTL_CGROUP_MEMORY=1 \
		AGENTCTL_BIN="$work/agentctl" "$@" -test.v -test.timeout "$((limit - 10))s" || rc=$?
	if [ "$rc" = 0 ]; then
		passed=$((passed + 1))
		results+=("ok    $name ($(since "$t") s)")
	else
		failed=$((failed + 1))
		results+=("FAIL  $name (exit $rc, $(since "$t") s)")
	fi
}
check "service package on systemd (install/enable/start, restart + KillMode=process, kill -9 + Restart=on-failure, stop/start, uninstall, quoting, takeover, start through the unit)" \
	"$work/service.test" -test.run 'SystemdReal'
check "agentctl binary on systemd (install + list via the unit, 5 sessions across systemctl restart and kill -9, uninstall, auto-start through the unit; a cgroup per session: a double-forked daemon stopped, --memory-max 50M an OOM kill, and without delegation it says so)" \
	"$work/systemd.test"

t=$(date +%s.%N)
"$harness" down
down_s=$(since "$t")
timing="user-manager harness: up ${up_s} s, down ${down_s} s"

if [ "${SYSTEMD_E2E_NSPAWN:-1}" != 0 ]; then
	"$nspawn" down >/dev/null 2>&1 || true
	t=$(date +%s.%N)
	if timeout 900 "$nspawn" up; then
		nup_s=$(since "$t")
		"$nspawn" install "$work/agentctl" /usr/local/bin/agentctl
		"$nspawn" install "$work/systemd.test" /usr/local/bin/agentctl-systemd.test
		# ncheck NAME TESTS PREFIX...: run the e2e tests matching TESTS in the
		# container, behind PREFIX (the env -i and setpriv that set the scene).
		ncheck() {
			local name=$1 tests=$2 t rc=0
			shift 2
			t=$(date +%s.%N)
			timeout --kill-after=10 "$limit" "$nspawn" run "$@" AGENTCTL_BIN=/usr/local/bin/agentctl \
				/usr/local/bin/agentctl-systemd.test -test.run "$tests" -test.v -test.timeout "$((limit - 10))s" || rc=$?
			if [ "$rc" = 0 ]; then
				passed=$((passed + 1))
				results+=("ok    $name ($(since "$t") s)")
			else
				failed=$((failed + 1))
				results+=("FAIL  $name (exit $rc, $(since "$t") s)")
			fi
		}
		ncheck "system unit in a booted Debian (install --system --user ci as root, runs as ci, sessions across restart and kill -9, status without root, uninstall via SUDO_USER)" \
			'^TestSystemService' \
			env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root AGENTCTL_SYSTEMD_SYSTEM_TEST=1 AGENTCTL_TEST_USER=ci
		ncheck "user unit under a real user@1000.service in a booted Debian (the binary tests above, as ci; the OOM test where the container's user manager has a memory controller)" \
			'^(TestServiceOnRealSystemd|TestAutostartGoesThroughTheUnit|TestCgroupUnderSystemdUnit|TestCgroupDelegationAbsent)$' \
			setpriv --reuid=1000 --regid=1000 --init-groups env -i HOME=/home/ci USER=ci LOGNAME=ci \
			PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR=/run/user/1000 \
			DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus AGENTCTL_SYSTEMD_TEST=1
		t=$(date +%s.%N)
		"$nspawn" down
		timing="$timing; nspawn container: up ${nup_s} s (root cached in ${SYSTEMD_NSPAWN_DIR:-/var/cache/agentctl-nspawn}), down $(since "$t") s"
	else
		failed=$((failed + 1))
		results+=("FAIL  nspawn container boot (see the log above)")
	fi
fi
trap 'rm -rf "$work"' EXIT

echo
echo "systemd-e2e summary"
echo "  build ${build_s} s; $timing; total $(since "$start") s"
printf '  %s\n' "${results[@]}"
echo "systemd-e2e: $passed passed, $failed failed"
[ "$failed" = 0 ]
