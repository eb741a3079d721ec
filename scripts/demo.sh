#!/usr/bin/env bash
# Builds agentctl and runs one real supervised session end to end: the CLI
# starts the service by itself, the session runs under a pty in its own
# process group, and list / status / logs answer from the records on disk.
# Uses a throwaway AGENTCTL_HOME and stops its service at the end.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo"
export PATH="/usr/local/go/bin:$PATH"
go build -o bin/agentctl ./cmd/agentctl
export AGENTCTL_HOME
AGENTCTL_HOME=$(mktemp -d /tmp/agentctl-demo.XXXXXX)
trap 'bin/agentctl daemon stop >/dev/null 2>&1 || true; rm -rf "$AGENTCTL_HOME"' EXIT

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step agentctl run -- sh -c '…count to 3, then exit 3…'
id=$(bin/agentctl run -- sh -c 'for i in 1 2 3; do echo "tick $i ($(tty))"; sleep 1; done; exit 3')
echo "$id"
step agentctl list
bin/agentctl list
step agentctl logs -f "${id:0:8}"
bin/agentctl logs -f "${id:0:8}"
step agentctl status "${id:0:8}"
bin/agentctl status "${id:0:8}"
step agentctl run --wait -- sh -c 'echo waited; exit 0'
bin/agentctl run --wait -- sh -c 'echo waited; exit 0'
step agentctl list -a
bin/agentctl list -a
step agentctl daemon status
bin/agentctl daemon status
