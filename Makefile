# agentctl — build, test, check.
GO      ?= go
BIN     ?= bin/agentctl
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build test check lint cross demo bench

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/agentctl

# The Go test suite: unit tests and end-to-end tests with real processes.
# End-to-end tests of real agent CLIs skip (loudly) unless they are
# installed; `make check` installs them first.
test:
	$(GO) test -race -timeout 20m ./...

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
