#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the real agent CLIs the
# end-to-end tests drive, then lint, cross-compile for macOS, and the Go
# tests with the race detector, then the packaging, systemd and Kubernetes
# tiers. Prints the wall time of each part. Every part runs even when one
# before it failed (one run shows everything that is wrong); the exit status
# is non-zero if any failed, and the failed parts are named at the end.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo"
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"

failed=()
# The space left on the disk the suite writes to (the repo's), now and at
# its lowest during each part (sampled every 5 s until this script ends): a
# part that fails for a full disk says so.
kib_free() { df -k --output=avail "$repo" | awk 'NR == 2 {print $1}'; }
gib() { awk -v k="$1" 'BEGIN {printf "%.1f GiB", k / 1048576}'; }
lowest=$(mktemp)
trap 'rm -f "$lowest"' EXIT
kib_free >"$lowest"
(
	while kill -0 $$ 2>/dev/null; do
		now=$(kib_free) low=$(cat "$lowest")
		[ "$now" -lt "${low:-$now}" ] && echo "$now" >"$lowest"
		sleep 5
	done
) >/dev/null 2>&1 &
echo "== disk: $(gib "$(kib_free)") free"
timed() {
	local name=$1
	shift
	local t0=$SECONDS rc=0 disk
	echo "== $name"
	kib_free >"$lowest"
	"$@" || rc=$?
	disk="disk $(gib "$(kib_free)") free, at least $(gib "$(cat "$lowest")")"
	if [ "$rc" -eq 0 ]; then
		echo "== $name: $((SECONDS - t0))s ($disk)"
	else
		echo "== $name: $((SECONDS - t0))s, FAILED (exit $rc) ($disk)"
	fi
	return "$rc"
}
# part NAME CMD...: a part of the suite; its failure is noted and the rest runs.
part() {
	local name=$1
	timed "$@" || failed+=("$name")
}

# Agent CLIs from npm into .cache (reused when the machine keeps it). A CLI
# that cannot be installed makes its tests skip with a loud reason.
timed "install agent CLIs" bash scripts/install-agents.sh || echo "check: WARNING: some agent CLIs did not install; their end-to-end tests will skip"
if [ -f scripts/install-openclaw.sh ]; then
	timed "install OpenClaw" bash scripts/install-openclaw.sh || echo "check: WARNING: OpenClaw did not install; its tests will skip"
fi

part "lint" make lint
part "cross-compile for macOS" make cross
part "go test -race" make test

# Packages: build the .deb and .rpm, install the .deb with dpkg, check where
# its files land, purge it.
if timed "install nfpm" bash scripts/install-nfpm.sh >/dev/null; then
	part "packages" make package-test
else
	failed+=("install nfpm")
fi

# The service on a real systemd (a user manager in a private mount
# namespace, and a booted Debian container for system units).
part "systemd e2e" bash scripts/systemd-e2e.sh

# Sessions on Kubernetes: a throwaway cluster built from the Go module proxy
# (cold ~20 min, ~2 with the build cache), the cluster backend's tests
# against it. Skips loudly without root.
part "kubernetes e2e" bash scripts/k8s-e2e.sh

if [ ${#failed[@]} -gt 0 ]; then
	echo "check: FAILED:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "check: every part passed"
