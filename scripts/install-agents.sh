#!/usr/bin/env bash
# Installs the agent CLIs that agentctl's end-to-end tests drive (Claude Code,
# Codex, OpenCode, Pi) from the npm registry into a cache folder, at the
# versions pinned in scripts/agent-versions.env.
#
#   scripts/install-agents.sh [claude|codex|opencode|pi ...]   (default: all four)
#
# AGENTCTL_AGENTS_DIR chooses the folder (default: .cache/agents in the
# repository). Each agent gets its own npm prefix named by package and
# version, so a pinned version already present is skipped, and bin/ holds one
# symlink per CLI. The last line printed is the bin folder, for PATH.
#
# Exit status: 0 when every requested agent is installed; 1 otherwise (the
# others are still installed, and the reason is printed).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
# shellcheck source=agent-versions.env
. "$repo/scripts/agent-versions.env"

dir=${AGENTCTL_AGENTS_DIR:-$repo/.cache/agents}
mkdir -p "$dir/bin" "$dir/pkgs"
dir=$(cd "$dir" && pwd -P)

log() { printf 'install-agents: %s\n' "$*" >&2; }

ensure_npm() {
	if command -v npm >/dev/null 2>&1; then
		return 0
	fi
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		log "npm not found; installing nodejs and npm with apt-get"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
	fi
	command -v npm >/dev/null 2>&1 || { log "npm is required: install Node.js 20.6 or newer"; return 1; }
}

# node_at_least MAJOR MINOR: whether the node on PATH is at least that version.
node_at_least() {
	local v
	v=$(node -p 'process.versions.node' 2>/dev/null) || return 1
	local major=${v%%.*} rest=${v#*.}
	local minor=${rest%%.*}
	[ "$major" -gt "$1" ] || { [ "$major" -eq "$1" ] && [ "$minor" -ge "$2" ]; }
}

# install NAME PACKAGE VERSION BIN
install() {
	local name=$1 pkg=$2 version=$3 bin=$4
	local prefix="$dir/pkgs/${pkg//\//_}@$version"
	local target="$prefix/node_modules/.bin/$bin"
	if [ -x "$target" ] && [ -f "$prefix/.complete" ]; then
		log "$name $version already installed"
	else
		log "installing $pkg@$version"
		local tmp
		tmp=$(mktemp -d "$dir/pkgs/.tmp-$name-XXXXXX")
		# The install goes to a temporary prefix first so that an interrupted
		# run never leaves a half-installed version that looks complete.
		if ! npm install --prefix "$tmp" --no-audit --no-fund --loglevel=error "$pkg@$version" >&2; then
			rm -rf "$tmp"
			log "FAILED: npm install $pkg@$version"
			return 1
		fi
		if ! "$tmp/node_modules/.bin/$bin" --version >/dev/null 2>&1; then
			rm -rf "$tmp"
			log "FAILED: $pkg@$version installed but '$bin --version' does not run"
			return 1
		fi
		touch "$tmp/.complete"
		rm -rf "$prefix"
		mv "$tmp" "$prefix"
	fi
	ln -sfn "$target" "$dir/bin/$bin"
}

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(claude codex opencode pi)

ensure_npm
failed=0
for a in "${want[@]}"; do
	case $a in
	claude) install claude @anthropic-ai/claude-code "$CLAUDE_CODE_VERSION" claude || failed=1 ;;
	codex) install codex @openai/codex "$CODEX_VERSION" codex || failed=1 ;;
	opencode) install opencode opencode-ai "$OPENCODE_VERSION" opencode || failed=1 ;;
	pi)
		if node_at_least 20 6; then
			install pi @mariozechner/pi-coding-agent "$PI_VERSION" pi || failed=1
		else
			log "FAILED: pi needs Node.js 20.6 or newer (found $(node --version 2>/dev/null || echo none))"
			failed=1
		fi
		;;
	*) log "unknown agent '$a' (known: claude codex opencode pi)"; failed=1 ;;
	esac
done
echo "$dir/bin"
exit "$failed"
