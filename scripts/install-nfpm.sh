#!/usr/bin/env bash
# Installs nfpm, which `make package` builds the .deb and .rpm with, into
# $(go env GOPATH)/bin (or $GOBIN), unless that version is already there.
# Newer nfpm releases than the pinned one fail to download through the Go
# module proxy at the time of writing.
set -euo pipefail
version=v2.45.2
bin=$(go env GOBIN)
[ -n "$bin" ] || bin=$(go env GOPATH)/bin
if [ -x "$bin/nfpm" ] && go version -m "$bin/nfpm" 2>/dev/null | grep -q "^[[:space:]]*mod[[:space:]]*github.com/goreleaser/nfpm/v2[[:space:]]*$version[[:space:]]"; then
	echo "$bin/nfpm"
	exit 0
fi
go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$version" >&2
echo "$bin/nfpm"
