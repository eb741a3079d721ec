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
# Bold only on a terminal: a pipe or a CI log gets plain text.
bold='' plain=''
if [[ -t 1 ]]; then
	bold=$'\033[1m' plain=$'\033[0m'
fi

# say announces what the demo does next, before the wait it may cause.
say() { printf '\n%s==> %s%s\n' "$bold" "$*" "$plain"; }

say "building agentctl (go build ./cmd/agentctl into bin/): the first build also compiles its dependencies and takes a few minutes; later builds take seconds"
began=$SECONDS
go build -o bin/agentctl ./cmd/agentctl
echo "built bin/agentctl in $((SECONDS - began))s"
export AGENTCTL_HOME
AGENTCTL_HOME=$(mktemp -d /tmp/agentctl-demo.XXXXXX)
echo "using a throwaway home: AGENTCTL_HOME=$AGENTCTL_HOME"
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
	printf '%s$ %s%s\n' "$bold" "$(quote "$@")" "$plain"
	"$@"
}

count='for i in 1 2 3; do echo "tick $i ($(tty))"; sleep 1; done; exit 3'
say "starting a session: no service runs yet, so the CLI starts it by itself"
printf '%s$ %s%s\n' "$bold" "id=\$($(quote agentctl run --name demo -- sh -c "$count"))" "$plain"
id=$(agentctl run --name demo -- sh -c "$count")
echo "$id"
say "listing it: its status is derived now, from its process and its records on disk"
step agentctl list
say "following its output until it ends (three seconds)"
step agentctl logs -f demo
say "its status once it has ended, by an id prefix: the exit code its monitor recorded"
step agentctl status "${id:0:4}"
say "a session whose output streams here and whose exit code is this command's"
step agentctl run --wait -- sh -c 'echo waited; exit 0'
say "every session, ended ones included"
step agentctl list -a
say "the service the CLI started (stopped, with the throwaway home, when the demo ends)"
step agentctl daemon status
