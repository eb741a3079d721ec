#!/usr/bin/env bash
# Runs a throwaway OpenClaw gateway on 127.0.0.1 in the foreground, for trying
# the openclaw adapter by hand: a scratch HOME and state folder, token auth,
# channels, Bonjour and updates off, and a model provider "fake" pointing at
# MODEL_URL (an OpenAI Chat Completions server such as the project's fake
# model). It stops by itself after the timeout or on Ctrl-C, ending the
# gateway by PID, and removes the scratch folder unless --keep.
#
#   scripts/openclaw-test-gateway.sh [--port N] [--token T] [--model-url URL]
#                                    [--timeout SECONDS] [--keep]
#
# Then, in another shell:
#   OPENCLAW_GATEWAY_URL=ws://127.0.0.1:N OPENCLAW_GATEWAY_TOKEN=T agentctl list
set -euo pipefail

port=18799
token=test-token-0123456789abcdef
model_url=http://127.0.0.1:18800/v1
timeout=1800
keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	--port) port=$2; shift 2 ;;
	--token) token=$2; shift 2 ;;
	--model-url) model_url=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) sed -n '2,14p' "$0"; exit 0 ;;
	*) echo "openclaw-test-gateway: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
paths="$(bash "$repo_root/scripts/install-openclaw.sh")"
node="$(sed -n 's/^node=//p' <<<"$paths")"
entry="$(sed -n 's/^openclaw=//p' <<<"$paths")"

work="$(mktemp -d)"
mkdir -p "$work/home/.openclaw" "$work/tmp"
cat >"$work/home/.openclaw/openclaw.json" <<EOF
{
  "gateway": { "mode": "local", "port": $port, "bind": "loopback",
               "auth": { "mode": "token", "token": "$token" } },
  "update": { "checkOnStart": false },
  "logging": { "file": "$work/openclaw.log" },
  "models": { "mode": "merge", "providers": { "fake": {
      "baseUrl": "$model_url", "apiKey": "fake-key", "api": "openai-completions",
      "models": [ { "id": "fake-model", "name": "Fake", "reasoning": false, "input": ["text"],
                    "cost": { "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0 },
                    "contextWindow": 128000, "maxTokens": 4096 } ] } } },
  "agents": { "defaults": { "model": { "primary": "fake/fake-model" } } }
}
EOF

gateway_pid=
cleanup() {
	if [ -n "$gateway_pid" ] && kill -0 "$gateway_pid" 2>/dev/null; then
		local t0=$SECONDS how=SIGTERM
		kill -TERM "$gateway_pid" 2>/dev/null || true
		for _ in $(seq 1 150); do
			kill -0 "$gateway_pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$gateway_pid" 2>/dev/null; then
			kill -KILL "$gateway_pid" 2>/dev/null || true
			how="SIGKILL after 15 s"
		fi
		echo "openclaw-test-gateway: gateway stopped ($how) in $((SECONDS - t0)) s" >&2
	fi
	if [ "$keep" = 1 ]; then
		echo "openclaw-test-gateway: kept $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

HOME="$work/home" TMPDIR="$work/tmp" PATH="$(dirname "$node"):$PATH" \
	OPENCLAW_GATEWAY_TOKEN="$token" OPENCLAW_DISABLE_BONJOUR=1 OPENCLAW_NO_RESPAWN=1 \
	OPENCLAW_SKIP_CHANNELS=1 OPENCLAW_EXEC_SHELL_SNAPSHOT=0 OPENCLAW_NO_AUTO_UPDATE=1 \
	setsid "$node" "$entry" gateway run --port "$port" --bind loopback \
	</dev/null >"$work/gateway.log" 2>&1 &
gateway_pid=$!

started=$SECONDS
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
	if ! kill -0 "$gateway_pid" 2>/dev/null; then
		echo "openclaw-test-gateway: the gateway exited; its log:" >&2
		tail -n 30 "$work/gateway.log" >&2
		exit 1
	fi
	if [ $((SECONDS - started)) -ge 120 ]; then
		echo "openclaw-test-gateway: port $port not open after 120 s" >&2
		exit 1
	fi
	sleep 0.5
done
echo "OPENCLAW_GATEWAY_URL=ws://127.0.0.1:$port"
echo "OPENCLAW_GATEWAY_TOKEN=$token"
echo "openclaw-test-gateway: pid $gateway_pid, port open after $((SECONDS - started)) s (RPCs may answer 'starting' for a few more seconds); log $work/gateway.log; stops in $timeout s or on Ctrl-C" >&2

deadline=$((SECONDS + timeout))
while kill -0 "$gateway_pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
	sleep 1
done
