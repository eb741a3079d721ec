#!/usr/bin/env bash
# Builds the test cluster's components (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kubectl) from the Go
# module proxy, in the build module test/k8s (its own go.mod, outside
# agentctl's dependency graph). The binaries land in $K8S_CACHE/bin (default
# .cache/k8s/bin) and are rebuilt only when test/k8s changes. The build has
# a Go build cache of its own, $K8S_CACHE/gocache (about 4 GB): it makes a
# rebuild after such a change take minutes, not the cold 10 to 16.
#
#   scripts/k8s-build.sh          build if needed, print the bin folder
#
#   K8S_KEEP_GOCACHE=0            remove that build cache after the build
#                                 (.ci/run: a fresh machine builds once, and
#                                 its disk may be short)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"
cache=${K8S_CACHE:-$repo/.cache/k8s}
bin=$cache/bin
version=v1.37.2

# The build's key: the module's files and the Go toolchain.
key=$( (cd "$repo/test/k8s" && cat go.mod go.sum $(find cmd -name '*.go' | sort) && go version) | sha256sum | cut -c1-16)
if [ -f "$bin/.key" ] && [ "$(cat "$bin/.key")" = "$key" ]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/bin.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	stamp+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=37 -X $pkg.gitTreeState=clean"
done
t0=$SECONDS
(
	cd "$repo/test/k8s"
	GOCACHE=$cache/gocache GOFLAGS=-mod=readonly CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "-s -w$stamp" -o "$tmp/" ./cmd/...
)
if [ "${K8S_KEEP_GOCACHE:-1}" = 0 ]; then
	rm -rf "$cache/gocache"
fi
echo "$key" >"$tmp/.key"
rm -rf "$bin"
mv "$tmp" "$bin"
trap - EXIT
echo "k8s-build: built in $((SECONDS - t0))s" >&2
echo "$bin"
