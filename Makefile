# Parley — build, test and contract tasks. `make help` lists them.
GO        ?= go
BIN       ?= bin/parley
NPM_TOOLS := tools/node_modules/.bin
BENCH_OUT ?= bench/latest.txt
export REDOCLY_TELEMETRY := off
export REDOCLY_SUPPRESS_UPDATE_NOTICE := true

.PHONY: help generate check-generated lint tools services build run test test-go bench migrate web

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

generate: ## Regenerate gen/ and client/ from api/openapi.yaml.
	$(GO) generate ./gen ./client

check-generated: generate web ## Fail when generated code, web/dist or go.mod/go.sum are stale.
	@git diff --exit-code -- gen client web/dist || { echo "generated code is stale: run 'make generate' and 'make web' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- gen client web/dist)" || { echo "untracked generated files:"; git status --porcelain -- gen client web/dist; exit 1; }
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy'"; exit 1; }

# The app pages' front end: web/src bundled by the pinned esbuild into web/dist, which is
# committed and embedded in the binary (web/embed.go); the same sources give the same bytes.
web: web/node_modules/.package-lock.json ## Rebuild web/dist (the app pages and embed.min.js) from web/src.
	cd web && node build.mjs
web/node_modules/.package-lock.json: web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

tools: $(NPM_TOOLS)/spectral ## Install the pinned npm tools (linters, Dify SDK).
$(NPM_TOOLS)/spectral: tools/package.json tools/package-lock.json
	cd tools && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

lint: tools ## gofmt, go vet, Spectral and Redocly on the contract.
	@out=$$(gofmt -l $$(git ls-files '*.go' ; git ls-files --others --exclude-standard '*.go')); test -z "$$out" || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	$(NPM_TOOLS)/spectral lint --fail-severity=warn api/openapi.yaml
	$(NPM_TOOLS)/redocly lint api/openapi.yaml

services: ## Start the PostgreSQL and Redis servers the tests use (installs them when missing).
	@bash scripts/services.sh

# The binary's version (`parley version`, GET /, X-Version) is the one the Go toolchain records from
# git (a tag, or a pseudo-version of the commit, "+dirty" with uncommitted changes); -buildvcs=true
# holds even where GOFLAGS turns it off. A release sets its own: make build VERSION=v1.2.3.
VERSION   ?=
LDFLAGS   := $(if $(VERSION),-X github.com/parleyhq/parley/internal/version.version=$(VERSION))

build: ## Build the parley binary into bin/ (VERSION=v1.2.3 sets its version).
	CGO_ENABLED=0 $(GO) build -buildvcs=true -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/parley

run: build ## Build, then run the server on the embedded default (SQLite under ./data, the sample config).
	$(BIN) serve

migrate: ## Apply database migrations.
	$(GO) run ./cmd/parley migrate

# BUDGET_PKGS hold the tests that pin allocations and SQL statements per request (the
# TestXxxBudget(s) tests, parleytest.CheckBudget). The race detector adds allocations of its
# own, so under -race they check statements only; test runs them once more without it.
BUDGET_PKGS := ./server ./internal/agent ./internal/workflow/chatflow ./internal/jobs

# The conformance package (servers, PostgreSQL, Redis and a browser under the race detector) may
# take longer than go test's default of 10 minutes on a busy machine: it gets 30.
test: services ## All tests: unit, storage on SQLite and PostgreSQL, Redis, conformance (with the pages in a headless chromium); then the allocation budgets without the race detector.
	PARLEY_REQUIRE_POSTGRES=1 PARLEY_REQUIRE_REDIS=1 $(GO) test -race -count=1 -timeout 30m ./...
	$(GO) test -count=1 -run 'Budgets?$$' $(BUDGET_PKGS)

bench: ## Micro-benchmarks to $(BENCH_OUT) (compare with benchstat), the load benchmark to bench/load.txt (LOAD_FLAGS=...; its replicas phase runs 1 and 3 replicas on PostgreSQL and Redis), knowledge indexing/retrieval to bench/knowledge.txt (KNOWLEDGE_FLAGS=...).
	@mkdir -p $(dir $(BENCH_OUT)) bench
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./... | tee $(BENCH_OUT)
	$(GO) run ./bench/load -postgres "$${PARLEY_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}" -redis "$${PARLEY_TEST_REDIS_URL:-redis://127.0.0.1:6379}" $(LOAD_FLAGS) -o bench/load.txt
	$(GO) run ./bench/knowledge -postgres "$${PARLEY_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}" $(KNOWLEDGE_FLAGS) -o bench/knowledge.txt
