#!/usr/bin/env bash
# Builds agentctl and runs one real supervised session end to end: the CLI
# starts the service by itself, the session runs under a pty in its own
# process group, and list / status / logs answer from the records on disk.
# Uses a throwaway AGENTCTL_HOME and stops its service at the end. Each step
# prints the command it runs, quoted so it can be pasted into a shell.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo"
export PATH="$repo/bin:/usr/local/go/bin:$PATH"
echo "compiling agentctl (go build ./cmd/agentctl into bin/): the first build also compiles"
echo "its dependencies and takes a few minutes; later builds take seconds"
began=$SECONDS
go build -o bin/agentctl ./cmd/agentctl
echo "compiled in $((SECONDS - began))s"
export AGENTCTL_HOME
AGENTCTL_HOME=$(mktemp -d /tmp/agentctl-demo.XXXXXX)
# Interrupted or not, stop what it started before removing its home.
trap 'agentctl stop --all --timeout 0 >/dev/null 2>&1 || true; agentctl daemon stop >/dev/null 2>&1 || true; rm -rf "$AGENTCTL_HOME"' EXIT

# quote writes its arguments as a shell would read them back: plain words
# as they are, others in single quotes.
quote() {
	local out=() a
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
			out+=("$a")
		else
			out+=("${a@Q}")
		fi
	done
	printf '%s' "${out[*]}"
}

# step prints a command, then runs it.
step() {
	printf '\n\033[1m$ %s\033[0m\n' "$(quote "$@")"
	"$@"
}

count='for i in 1 2 3; do echo "tick $i ($(tty))"; sleep 1; done; exit 3'
printf '\n\033[1m$ %s\033[0m\n' "id=\$($(quote agentctl run --name demo -- sh -c "$count"))"
id=$(agentctl run --name demo -- sh -c "$count")
echo "$id"
step agentctl list
step agentctl logs -f demo
step agentctl status "${id:0:4}"
step agentctl run --wait -- sh -c 'echo waited; exit 0'
step agentctl list -a
step agentctl daemon status
