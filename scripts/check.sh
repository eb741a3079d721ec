#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the real agent CLIs the
# end-to-end tests drive, then lint, cross-compile for macOS, and the Go
# tests with the race detector. Prints the wall time of each part.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo"
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"

timed() {
	local name=$1
	shift
	local t0=$SECONDS
	echo "== $name"
	"$@"
	echo "== $name: $((SECONDS - t0))s"
}

# Agent CLIs from npm into .cache (reused when the machine keeps it). A CLI
# that cannot be installed makes its tests skip with a loud reason.
timed "install agent CLIs" bash scripts/install-agents.sh || echo "check: WARNING: some agent CLIs did not install; their end-to-end tests will skip"
if [ -f scripts/install-openclaw.sh ]; then
	timed "install OpenClaw" bash scripts/install-openclaw.sh || echo "check: WARNING: OpenClaw did not install; its tests will skip"
fi

timed "lint" make lint
timed "cross-compile for macOS" make cross
timed "go test -race" make test

# Packages: build the .deb and .rpm, install the .deb with dpkg, check where
# its files land, purge it.
timed "install nfpm" bash scripts/install-nfpm.sh >/dev/null
timed "packages" make package-test

# The service on a real systemd (a user manager in a private mount
# namespace, and a booted Debian container for system units).
timed "systemd e2e" bash scripts/systemd-e2e.sh

# Sessions on Kubernetes: a throwaway cluster built from the Go module proxy
# (cold ~20 min, ~2 with the build cache), the cluster backend's tests
# against it. Skips loudly without root.
timed "kubernetes e2e" bash scripts/k8s-e2e.sh
