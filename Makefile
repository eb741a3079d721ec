# agentctl — build, test, check.
GO      ?= go
BIN     ?= bin/agentctl
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: build test check lint cross demo bench fuzz

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/agentctl
	$(GO) build -ldflags "$(LDFLAGS)" -o $(dir $(BIN))agentctl-k8s ./cmd/agentctl-k8s

# The Go test suite: unit tests and end-to-end tests with real processes.
# End-to-end tests of real agent CLIs skip (loudly) unless they are
# installed; `make check` installs them first.
test:
	$(GO) test -race -timeout 30m ./...

lint:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# Nothing Linux-only may leak into shared code.
cross:
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./...
	CGO_ENABLED=0 GOOS=darwin GOARCH=amd64 $(GO) build -o /dev/null ./...

# The whole suite as CI runs it: install the agent CLIs, lint, cross-compile,
# test.
check:
	bash scripts/check.sh

demo:
	bash scripts/demo.sh

bench:
	$(GO) test -run '^$$' -bench . -benchtime 20x ./e2e/

# Every fuzz target for FUZZTIME (default 30s) each.
fuzz:
	bash scripts/fuzz.sh

# Distribution packages: dist/*.deb and dist/*.rpm with the binary, the
# systemd units, completions and man pages (packaging/nfpm.yaml).
DIST        ?= dist
PKG_ARCH    ?= $(shell $(GO) env GOARCH)
PKG_VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null | sed 's/^v//; s/-/+/g' | grep . || echo "0.0.0~git$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)")
# nfpm on PATH (scripts/install-nfpm.sh), else built from the module proxy.
NFPM        ?= $(shell command -v nfpm 2>/dev/null || echo $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2)
PKG_ROOT    := $(DIST)/pkgroot

.PHONY: package package-test systemd-e2e

package: build
	rm -rf $(PKG_ROOT) $(DIST)/*.deb $(DIST)/*.rpm
	mkdir -p $(PKG_ROOT)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(PKG_ARCH) $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(PKG_ROOT)/agentctl ./cmd/agentctl
	CGO_ENABLED=0 GOOS=linux GOARCH=$(PKG_ARCH) $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(PKG_ROOT)/agentctl-k8s ./cmd/agentctl-k8s
	# gen-docs is only in a build with -tags gendocs (its man page writer
	# would cost every start of the shipped binary).
	$(GO) build -tags gendocs -ldflags "$(LDFLAGS)" -o $(DIST)/agentctl-gendocs ./cmd/agentctl
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) $(DIST)/agentctl-gendocs gen-docs --out $(PKG_ROOT)
	gzip -9nf $(PKG_ROOT)/man1/*.1
	for p in deb rpm; do \
		PKG_ROOT=$(PKG_ROOT) PKG_ARCH=$(PKG_ARCH) PKG_VERSION='$(PKG_VERSION)' \
			$(NFPM) package -f packaging/nfpm.yaml -p $$p -t $(DIST)/ || exit 1; \
	done
	ls -l $(DIST)/*.deb $(DIST)/*.rpm

# Installs the .deb with dpkg, checks where its files land, purges it.
package-test: package
	bash scripts/package-test.sh $(DIST)

# agentctl service on a real systemd user manager (needs root).
systemd-e2e:
	bash scripts/systemd-e2e.sh
