# Sundial's developer commands. `make` alone lists them.
#
# Tests and benchmarks run through withpg, which uses SUNDIAL_TEST_DATABASE_URL
# or SUNDIAL_DATABASE_URL when set, else the PostgreSQL server on
# 127.0.0.1:5432, else a throwaway cluster started with the machine's own
# PostgreSQL binaries.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

SERVICES := gateway scheduler dispatcher notifier
# Every Go module of the workspace (tools is separate: it pins the generators).
MODULES := pkg sdk cmd/sundial testkit migrations $(addprefix services/,$(SERVICES)) deploy/local deploy/k8s tests tests/bench
# In workspace mode a pattern must start at a module's root: ./... from the
# repository root matches nothing, so each module gets its own pattern.
PACKAGES := $(addsuffix /...,$(addprefix ./,$(MODULES)))
# The system suites (tests/): whole services in-process or as processes,
# NATS, Chromium. make test-race runs the other modules' tests under the race
# detector; the suites run without it, as the binaries users run are built.
SYSTEM_MODULES := tests tests/bench
UNIT_PACKAGES := $(addsuffix /...,$(addprefix ./,$(filter-out $(SYSTEM_MODULES),$(MODULES))))
# Generated code; `make verify` fails when it drifts from what is committed.
# (the .sql files beside sqlc's output are sources, not generated.)
GENERATED := pkg/event/eventv1 ':(glob)services/*/internal/store/*.go' ':(glob)services/*/internal/storetest/*.go' \
	services/gateway/internal/api/gen tests/openapiclient/gen ':(glob)tests/internal/dbdump/*.go' docs/configuration.md
PROTO_FILES = $(shell find proto -name '*.proto' | LC_ALL=C sort)
# The gateway's OpenAPI document, and the linter that checks it, at exact
# versions: npx fetches them from the npm registry once, then from its cache.
# The linter needs Node.js 20.19 or later, which a distribution's nodejs may
# not be, so it runs on the node package of the registry whatever the
# machine's node is.
OPENAPI_DIR := services/gateway/openapi
REDOCLY_CLI := @redocly/cli@2.11.0
LINT_NODE := node@20.19.5

BIN := $(CURDIR)/.bin
WITHPG := $(BIN)/withpg
# e.g. GO_TEST_FLAGS=-v, or WITHPG_FLAGS=--cluster to test against a
# throwaway cluster even when a server answers.
GO_TEST_FLAGS ?=
WITHPG_FLAGS ?=

.PHONY: image image-push check-image print-version help run test test-race lint bench bench-check bench-e2e bench-compare generate generate-sqlc generate-proto generate-openapi generate-configdoc verify \
	check-generated check-fmt check-comments check-alerts check-openapi-client vet build-modules lint-openapi build tidy withpg clean vendor-dashboard \
	screenshots k8s k8s-check tzdata

help: ## list the targets
	@echo "Usage: make TARGET"
	@echo
	@grep -E '^[a-z][a-zA-Z_-]*:.*## ' $(MAKEFILE_LIST) | \
		awk 'BEGIN {FS = ":.*## "}; {printf "  %-16s %s\n", $$1, $$2}'

# Built, then run (not `go run`), so that Ctrl-C reaches the runner itself
# and its exit status is the make target's. ARGS go to the runner
# (make run ARGS=--help). The wait is announced only when there is no runner
# yet: later builds compile only what changed since.
run: ## run all of Sundial on this machine, with a demo project (Ctrl-C stops it; ARGS=--help)
	@[ -e $(BIN)/sundial-local ] || echo "Building the local runner ($(BIN)/sundial-local): the first build compiles all of Sundial and its dependencies, which can take a few minutes."
	@go build -o $(BIN)/sundial-local ./deploy/local/cmd/sundial-local
	$(BIN)/sundial-local $(ARGS)

withpg: ## build .bin/withpg, which gives a command a PostgreSQL server
	go build -o $(WITHPG) ./deploy/local/cmd/withpg

# The suites always get a throwaway cluster of their own (max_connections
# 300, fsync off): they run many packages at once, several booting service
# processes with pools of their own, past the 100 connections of a default
# server, which others on the machine may be using as well.
#
# Most tests wait (for a due time, a lease, a retry) far more than they
# compute, so each package runs four tests at once (-parallel 4) rather than
# one per processor.
#
# -trimpath keeps the checkout's folder out of the build cache's keys: a
# fresh clone elsewhere (CI's) then reuses what an earlier build compiled
# instead of compiling every package of the repository again.
test: withpg ## run every module's tests, unit and system, against a throwaway PostgreSQL cluster
	$(WITHPG) --cluster $(WITHPG_FLAGS) -- go test -trimpath -count=1 -parallel 4 $(GO_TEST_FLAGS) $(PACKAGES)

# The race detector multiplies the processor time of a test by several
# times; .ci/run runs this after make test. The system suites are left out:
# their services are mostly separate processes, and the modules' own
# packages (the services' app packages among them) run the same code.
test-race: withpg ## run the modules' own tests (not the system suites) under the race detector
	$(WITHPG) --cluster $(WITHPG_FLAGS) -- go test -trimpath -race -count=1 -parallel 4 $(GO_TEST_FLAGS) $(UNIT_PACKAGES)

# The README's pictures of the dashboard, rewritten from a browser test's
# demo state (docs/dashboard.md, "Browser tests"); needs Chromium.
screenshots: withpg ## rewrite the dashboard pictures in docs/images from the browser tests
	cd tests && SUNDIAL_SCREENSHOTS=$(CURDIR)/docs/images $(WITHPG) $(WITHPG_FLAGS) -- go test -count=1 -run 'TestReadmeScreenshots' ./browser

# Includes the API load test (services/gateway/apibench: tables on stdout,
# .bench/api.json), which loads two million hooks: hence the long timeout.
# SUNDIAL_BENCH_DURATION (default 10s) and SUNDIAL_BENCH_CLIENTS (64) tune it.
# With BENCH_QUICK=1 only the end-to-end suite runs, scaled down.
bench: withpg bench-check ## check the benchmark itself, run every module's benchmarks, the API load test among them, then bench-e2e
	if [ "$${BENCH_QUICK:-}" != 1 ]; then \
		$(WITHPG) $(WITHPG_FLAGS) -- go test -run '^$$' -bench . -benchmem -timeout 30m $(GO_TEST_FLAGS) $(PACKAGES); \
	fi
	@$(MAKE) bench-e2e

# The benchmark's own tests: each runs a scaled-down benchmark (BENCH_QUICK=1)
# and checks that its report is well formed (tests/bench/README.md, "Tests").
# Tagged benchcheck, so that make test stays a test of Sundial; make verify
# still compiles them.
bench-check: withpg ## run the benchmark scaled down and check its reports (about 5 minutes)
	$(WITHPG) $(WITHPG_FLAGS) -- go test -tags benchcheck -count=1 -timeout 20m ./tests/bench/cmd/bench

# The end-to-end benchmark (tests/bench): the four services as processes,
# NATS JetStream as a process, a local HTTPS receiver. Scenarios: schedule
# (POST /v1/hooks closed loop), burst (100,000 hooks due at once), steady
# (500 hooks/s for 60 s), scale-1m and scale-10m (steady with 1,000,000 and
# 10,000,000 far-future hooks loaded by COPY), same-second (1,000 hooks),
# and each service's peak memory. One table on stdout, .bench/e2e.json, logs
# under .bench/e2e/. BENCH_QUICK=1 scales every scenario down (about two
# minutes); BENCH_SCENARIOS picks scenarios; BENCH_SERVICE_ENV tunes the
# services; BENCH_PPROF=1 profiles burst and scale (see tests/bench/README.md).
bench-e2e: withpg ## run the end-to-end delivery benchmark (full size: about 15 minutes)
	go build -o $(BIN)/bench ./tests/bench/cmd/bench
	$(WITHPG) $(WITHPG_FLAGS) -- $(BIN)/bench

# The same suite, each delivery scenario run on Sundial then on the river
# baseline (tests/bench/cmd/riverbase) in turn, with the ratios Sundial /
# baseline for deliveries per second and lateness p99.
bench-compare: withpg ## run the end-to-end benchmark on Sundial and the river baseline, alternating
	go build -o $(BIN)/bench ./tests/bench/cmd/bench
	BENCH_SYSTEMS=sundial,baseline $(WITHPG) $(WITHPG_FLAGS) -- $(BIN)/bench

generate: generate-sqlc generate-proto generate-openapi generate-configdoc ## regenerate sqlc, protobuf and OpenAPI code, and the configuration tables

# After a successful run, output whose .sql source is gone (renamed or
# deleted) is removed, and copyfrom.go where no :copyfrom query is left, so
# no stale Go stays behind. Nothing is removed when
# sqlc fails.
generate-sqlc: ## regenerate each service's internal/store and internal/storetest from their .sql files
	cd tools && GOWORK=off go tool sqlc -f ../sqlc.yaml generate
	for f in services/*/internal/store/*.sql.go services/*/internal/storetest/*.sql.go; do \
		[ -e "$${f%.go}" ] || rm -v "$$f"; \
	done
	for f in services/*/internal/store/copyfrom.go services/*/internal/storetest/copyfrom.go; do \
		[ ! -e "$$f" ] || grep -qs -- ':copyfrom' "$${f%/*}"/*.sql || rm -v "$$f"; \
	done

generate-proto: ## regenerate pkg/event/eventv1 from proto/
	GOWORK=off go -C tools build -o $(BIN)/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
	protoc --plugin=protoc-gen-go=$(BIN)/protoc-gen-go -I proto --go_out=pkg \
		--go_opt=module=github.com/sundial-run/sundial/pkg $(PROTO_FILES)

# The gateway's HTTP layer (models, echo server, strict server) from its
# OpenAPI document, with the Go bindings of its overlay; run from the
# document's folder, which the config's paths are relative to. Then the
# third-party client check's client (tests/openapiclient), from the document
# as the gateway serves it, which names no Go type of the gateway's, and the
# document's SHA-256, which its test compares with what a gateway serves.
generate-openapi: ## regenerate the gateway's internal/api/gen, and tests/openapiclient/gen from the served document
	GOWORK=off go -C tools build -o $(BIN)/oapi-codegen github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen
	cd $(OPENAPI_DIR) && $(BIN)/oapi-codegen -config oapi-codegen.yaml openapi.yaml
	go run ./tests/openapiclient/cmd/openapijson > $(BIN)/openapi.json
	cd tests/openapiclient && $(BIN)/oapi-codegen -config oapi-codegen.yaml $(BIN)/openapi.json
	sha256sum < $(BIN)/openapi.json | cut -d' ' -f1 > tests/openapiclient/gen/openapi.json.sha256

# The configuration tables of docs/configuration.md, between its configdoc
# markers, from the doc comments of the services' Config fields and the
# defaults their loaders give.
generate-configdoc: ## regenerate docs/configuration.md's tables from the services' Configs
	go run ./deploy/local/cmd/configdoc

verify: generate ## fail on drifted generated code, unformatted files, diary comments, vet and golangci-lint findings, broken module builds, OpenAPI lint, a client generated from the served OpenAPI document that fails its round trip, invalid deployment files, an image that does not build, or alert rules and dashboard queries that fail promtool
	@$(MAKE) -k check-generated check-fmt check-comments vet lint build-modules lint-openapi check-openapi-client k8s-check check-image check-alerts

# The tests make test leaves out, which vet and lint still read: the
# benchmark's (benchcheck) and the image's (imagecheck).
CHECK_TAGS := benchcheck,imagecheck

check-image: ## build the image for this machine's architecture (gateway only) and run its binary
	go test -tags imagecheck -count=1 -run TestBuildMakesARunnableImage ./deploy/k8s/image/

# promtool at the version tools/promtool pins: the shipped alert rules
# must pass their unit tests (deploy/monitoring/alerts_test.yaml), and
# every query of the Grafana dashboard must parse.
MONITORING := charts/sundial/files
check-alerts: ## check the alert rules with promtool, run their unit tests, and parse every dashboard query
	cd tools/promtool && GOWORK=off go build -o $(BIN)/promtool github.com/prometheus/prometheus/cmd/promtool
	$(BIN)/promtool check rules $(MONITORING)/alerts.yaml
	$(BIN)/promtool test rules deploy/monitoring/alerts_test.yaml
	@mkdir -p $(BIN)/dashboard
	GOWORK=off go -C tools run ./dashboardrules $(CURDIR)/$(MONITORING)/grafana-dashboard.json > $(BIN)/dashboard/rules.yaml
	$(BIN)/promtool check rules $(BIN)/dashboard/rules.yaml

check-generated: ## fail when generated code differs from what is committed
	@changes="$$(git status --porcelain -- $(GENERATED))"; \
	if [ -n "$$changes" ]; then \
		echo "Generated code differs from what is committed; run make generate and commit:"; \
		echo "$$changes"; \
		git --no-pager diff -- $(GENERATED); \
		exit 1; \
	fi

# Tracked files, and new ones not ignored yet, so that a file is checked
# before its first commit too.
check-fmt: ## fail when a Go file is not gofmt-ed
	@files="$$(git ls-files --cached --others --exclude-standard -- '*.go' | while read -r f; do [ ! -f "$$f" ] || echo "$$f"; done)"; \
	bad="$$(echo "$$files" | xargs -r gofmt -l)"; \
	if [ -n "$$bad" ]; then echo "Not gofmt-ed (run gofmt -w):"; echo "$$bad"; exit 1; fi

# Comments say why, not what a benchmark run measured: figures, dates and
# issue numbers belong in docs/benchmarks.md, which a comment may cite by
# one of its sections (.ci/check-comments lists them).
check-comments: ## fail when a code or SQL comment quotes µs or p99 figures, a date, an issue, or a docs/ section that is gone
	@.ci/check-comments

vet: ## go vet every module (the benchmark's tagged tests included)
	go vet -tags $(CHECK_TAGS) $(PACKAGES)

# golangci-lint at the version tools/lint pins, with .golangci.yml's
# linters, over every module (it reads one module at a time); the
# benchmark's tagged tests included.
lint: ## run golangci-lint on every module
	cd tools/lint && GOWORK=off go build -o $(BIN)/golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	@failed=""; for m in $(MODULES); do \
		echo "golangci-lint run in $$m"; \
		(cd "$$m" && $(BIN)/golangci-lint run --build-tags $(CHECK_TAGS) ./...) || failed="$$failed $$m"; \
	done; \
	if [ -n "$$failed" ]; then echo "golangci-lint found problems in:$$failed"; exit 1; fi

# Each module must also build alone, through its replace directives; vet
# compiles the test files too (the tests module has nothing else).
build-modules: ## build and vet every module alone (GOWORK=off)
	@failed=""; for m in $(MODULES); do \
		echo "GOWORK=off go build ./... && go vet ./... in $$m"; \
		(cd "$$m" && GOWORK=off go build ./... && GOWORK=off go vet -tags $(CHECK_TAGS) ./...) || failed="$$failed $$m"; \
	done; \
	if [ -n "$$failed" ]; then echo "Modules that do not build alone:$$failed (make tidy?)"; exit 1; fi

lint-openapi: ## lint the gateway's OpenAPI document with Redocly's recommended rules
	cd $(OPENAPI_DIR) && npx --yes -p $(LINT_NODE) -p $(REDOCLY_CLI) -c 'redocly lint --config redocly.yaml openapi.yaml'

# The third-party client check: the client oapi-codegen generates from the
# document as served (tests/openapiclient; check-generated catches a stale
# one) schedules, reads, lists and cancels a hook, and reads a refusal,
# against a gateway booted in-process on PostgreSQL and NATS.
check-openapi-client: withpg ## run the round trip of the client generated from the served OpenAPI document
	$(WITHPG) $(WITHPG_FLAGS) -- go test -count=1 ./tests/openapiclient/...

# The Helm chart (charts/sundial, docs/operations.md): rendered with helm's
# library for each shape package validate lists (small, ha, and the optional
# parts on), linted with helm lint's rules, each object checked offline
# against its schema (Kubernetes API types, the vendored KEDA, CloudNativePG
# and Prometheus Operator CRDs), the NATS chart's values files
# (deploy/nats) against that chart's keys, and every Sundial container's and
# docker-compose.yml service's environment read by the service's own
# configuration code.
K8S_OUT := $(CURDIR)/.k8s

k8s: ## render the chart's checked shapes into .k8s/NAME.yaml (checked as k8s-check does)
	rm -rf $(K8S_OUT)
	go run ./deploy/k8s/cmd/k8s-check -out $(K8S_OUT)

k8s-check: ## lint and check the chart charts/sundial, the NATS values and docker-compose.yml offline
	go run ./deploy/k8s/cmd/k8s-check

# The version, in one place: VERSION, stamped into every binary (each
# service's app.Version, the sundial tool's main.version). The sundial tool
# is built static (no cgo: it runs on any Linux of its architecture).
VERSION ?= $(shell cat VERSION)

# The image (deploy/k8s/image): every service, static, on an empty base,
# for linux/amd64 and linux/arm64, as an OCI layout in .image/; no Docker
# daemon. image-push pushes it: make image-push IMAGE=registry.example.com/sundial:0.1.0
image: ## build the multi-platform image into .image/ (an OCI layout)
	go run ./deploy/k8s/cmd/image -out .image

image-push: ## build the image and push it to IMAGE (registry/repository:tag)
	@test -n "$(IMAGE)" || { echo "usage: make image-push IMAGE=registry.example.com/sundial:$(VERSION)"; exit 2; }
	go run ./deploy/k8s/cmd/image -push $(IMAGE)

print-version: ## print the version make build stamps
	@echo $(VERSION)

build: ## build one binary per service, and the sundial command-line tool, into bin/, with VERSION stamped
	@for s in $(SERVICES); do \
		go build -trimpath -ldflags "-X github.com/sundial-run/sundial/services/$$s/app.Version=$(VERSION)" -o bin/$$s ./services/$$s/cmd/$$s || exit 1; \
	done
	CGO_ENABLED=0 go build -trimpath -ldflags '-X main.version=$(VERSION)' -o bin/sundial ./cmd/sundial

# tools/ is left alone: it pins the generators as they were added.
tidy: ## go mod tidy in every module, each on its own (GOWORK=off)
	@for m in $(MODULES); do \
		echo "go mod tidy in $$m"; \
		(cd "$$m" && GOWORK=off go mod tidy); \
	done

# The dashboard's vendored files (docs/dashboard.md), and the browser tests'
# (axe-core): each line of a vendor.lock names a tarball, its SHA-256, a file
# in it and that file's SHA-256. The tarball and the file are checked before
# the committed copy is replaced.
VENDOR_DIRS := services/gateway/internal/dashboard/static/vendor tests/browser/testdata/vendor
vendor-dashboard: ## fetch the dashboard's and the browser tests' vendored files again (htmx, axe-core) and check their hashes against each vendor.lock
	@set -eu; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	for dir in $(VENDOR_DIRS); do \
	grep -v '^#' $$dir/vendor.lock | while read -r name version url tarsum file filesum dest; do \
		tarball="$$tmp/$$name-$$version.tgz"; \
		[ -e "$$tarball" ] || curl -fsSL -o "$$tarball" "$$url"; \
		echo "$$tarsum  $$tarball" | sha256sum -c --quiet; \
		tar -xzf "$$tarball" -C "$$tmp" "$$file"; \
		echo "$$filesum  $$tmp/$$file" | sha256sum -c --quiet; \
		cp "$$tmp/$$file" "$$dir/$$dest"; \
		echo "$$name $$version: $$dir/$$dest verified"; \
	done; \
	done

# The tz database local times are resolved with (pkg/calendar/tzdata): the
# archive of the Go toolchain in use, and its release as lib/time/update.bash
# names it.
tzdata: ## replace the embedded tz database with the Go toolchain's (pkg/calendar/tzdata)
	@set -eu; root=$$(go env GOROOT); \
	cp "$$root/lib/time/zoneinfo.zip" pkg/calendar/tzdata/zoneinfo.zip; \
	sed -n 's/^DATA=//p' "$$root/lib/time/update.bash" > pkg/calendar/tzdata/VERSION; \
	echo "tz database $$(cat pkg/calendar/tzdata/VERSION) in pkg/calendar/tzdata"

clean: ## remove built binaries (keeps .data, the local cluster and NATS store)
	rm -rf bin .bin
