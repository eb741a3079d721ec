#!/usr/bin/env bash
# Proves `agentctl service` on a real systemd: brings up the harness of
# scripts/systemd-harness.sh (a systemd user manager in a private mount
# namespace, for a throwaway user), runs the service package's tests and the
# end-to-end tests of e2e/systemd in it as that user, tears everything down,
# and prints a summary with durations.
#
#   scripts/systemd-e2e.sh
#
# Needs root and Go; installs systemd and util-linux with apt-get when they
# are missing. Exits non-zero when any check fails. Bounded: each test binary
# gets SYSTEMD_E2E_TIMEOUT seconds (default 300).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo"
harness=$repo/scripts/systemd-harness.sh
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
	rm -rf "$work"
}
trap cleanup EXIT

t=$(date +%s.%N)
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
	timeout --kill-after=10 "$limit" "$harness" run-user AGENTCTL_SYSTEMD_TEST=1 \
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
check "agentctl binary on systemd (install + list via the unit, 5 sessions across systemctl restart and kill -9, uninstall, auto-start through the unit)" \
	"$work/systemd.test"

t=$(date +%s.%N)
"$harness" down
down_s=$(since "$t")
trap 'rm -rf "$work"' EXIT

echo
echo "systemd-e2e summary (harness: systemd --user in a private mount namespace)"
echo "  build ${build_s} s, harness up ${up_s} s, down ${down_s} s, total $(since "$start") s"
printf '  %s\n' "${results[@]}"
echo "systemd-e2e: $passed passed, $failed failed"
[ "$failed" = 0 ]
