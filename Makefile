# reqtrace — build, run and test. A fresh clone needs only `make run` or
# `make test`: everything else (npm packages, bootstraps) is installed or
# built on demand from pinned versions.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
FUNCTIONS := WikiRequirements WikiWeb WikiContent WikiBaselines WikiBaselineJobs WikiIntegrations TrackerApiFunction TrackerLinks TrackerOutbox Sync
# functions/<dir> of a LogicalId: lower case, trailing "function" removed.
fn_dir     = functions/$(patsubst %function,%,$(shell echo $(1) | tr A-Z a-z))
LDFLAGS   := -s -w
GOFLAGS_BUILD := -trimpath -tags lambda.norpc -ldflags="$(LDFLAGS)"
BUILD_DIR := .build
NODE_MODULES := infra/node_modules/.package-lock.json
TEST_TIMEOUT ?= 20m

.PHONY: help
help: ## list targets
	@grep -hE '^[a-zA-Z_%-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(NODE_MODULES): infra/package.json infra/package-lock.json
	npm ci --prefix infra --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: deps
deps: $(NODE_MODULES) ## install pinned npm packages (DynamoDB Local)

# ---------------------------------------------------------------- build
.PHONY: build
build: ## build every function's bootstrap for this machine into .build/<LogicalId>/
	@for f in $(FUNCTIONS); do \
	  dir=functions/$$(echo $$f | tr A-Z a-z | sed 's/function$$//'); \
	  CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o $(BUILD_DIR)/$$f/bootstrap ./$$dir; \
	done

# SAM (BuildMethod: makefile) calls build-<LogicalId> with ARTIFACTS_DIR set.
define sam_build
.PHONY: build-$(1)
build-$(1):
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o $$(ARTIFACTS_DIR)/bootstrap ./$(call fn_dir,$(1))
endef
$(foreach f,$(FUNCTIONS),$(eval $(call sam_build,$(f))))

# ---------------------------------------------------------------- run
.PHONY: run
run: deps build ## run the whole service locally (wiki :3000, tracker :3001), Ctrl-C stops it; data kept in .build/local-data (FRESH=1 starts empty)
	@$(GO) build -o $(BUILD_DIR)/localstack ./infra/cmd/localstack
	@if [ -n "$(FRESH)" ]; then rm -rf $(BUILD_DIR)/local-data; fi
	@exec $(BUILD_DIR)/localstack -build-dir $(BUILD_DIR) -data-dir $(BUILD_DIR)/local-data

.PHONY: invoke
invoke: deps build ## invoke one function with an event: make invoke FN=Sync EVENT=events/sync-schedule.json
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make invoke FN=<LogicalId> EVENT=events/<file>.json"; exit 2; }
	@$(GO) build -o $(BUILD_DIR)/localstack ./infra/cmd/localstack
	@$(BUILD_DIR)/localstack -build-dir $(BUILD_DIR) -invoke $(FN) -event $(EVENT)

.PHONY: admin
admin: ## the admin command: make admin ARGS="tenant create acme"
	$(GO) run ./infra/cmd/reqtrace-admin $(ARGS)

# ---------------------------------------------------------------- test
# The browser test (infra/browsertest) drives Debian's chromium; install it
# when missing (as root, as CI runs; apt-get update first on a fresh machine).
.PHONY: chromium
chromium: ## install Debian's chromium for the browser test when it is missing
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	@command -v chromium >/dev/null 2>&1 || { echo "chromium is not installed and apt-get could not install it"; exit 1; }

.PHONY: test
test: deps build lint chromium ## every test; starts and stops DynamoDB Local and moto itself; screenshots of the browser test in .build/test-output
	@mkdir -p $(BUILD_DIR) $(BUILD_DIR)/test-output
	$(GO) build -o $(BUILD_DIR)/localdeps ./infra/cmd/localdeps
	@rm -f $(BUILD_DIR)/localdeps.env
	@$(BUILD_DIR)/localdeps -env-file $(BUILD_DIR)/localdeps.env > $(BUILD_DIR)/localdeps.log 2>&1 & echo $$! > $(BUILD_DIR)/localdeps.pid; \
	trap 'kill $$(cat $(BUILD_DIR)/localdeps.pid) 2>/dev/null; wait $$(cat $(BUILD_DIR)/localdeps.pid) 2>/dev/null || true' EXIT; \
	for i in $$(seq 1 120); do [ -s $(BUILD_DIR)/localdeps.env ] && break; sleep 0.5; done; \
	[ -s $(BUILD_DIR)/localdeps.env ] || { cat $(BUILD_DIR)/localdeps.log; echo "local AWS stand-ins did not start"; exit 1; }; \
	source $(BUILD_DIR)/localdeps.env; \
	REQTRACE_BUILD_DIR=$(CURDIR)/$(BUILD_DIR) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -artifacts -outputdir $(CURDIR)/$(BUILD_DIR)/test-output ./...

.PHONY: lint
lint: ## gofmt, go vet, cfn-lint, OpenAPI validation
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './infra/node_modules/*')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cfn-lint template.yaml
	openapi-spec-validator shared/openapi/wiki.yaml shared/openapi/tracker.yaml

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each (default 30s); their seed corpora run in make test
	@failed=""; \
	for f in $$(grep -rl --include='*_test.go' '^func Fuzz' shared infra); do \
	  for t in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | cut -d' ' -f2); do \
	    pkg=./$$(dirname $$f); echo "== $$t $$pkg"; \
	    before=$$( (ls $$pkg/testdata/fuzz/$$t 2>/dev/null || true) | wc -l); \
	    if $(GO) test -run XXX -fuzz "^$$t$$" -fuzztime $${FUZZTIME:-30s} $$pkg; then continue; fi; \
	    after=$$( (ls $$pkg/testdata/fuzz/$$t 2>/dev/null || true) | wc -l); \
	    if [ "$$after" -gt "$$before" ]; then failed="$$failed $$t($$pkg)"; continue; fi; \
	    echo "-- $$t failed without a failing input (the fuzzing engine, not the code): once more"; \
	    $(GO) test -run XXX -fuzz "^$$t$$" -fuzztime $${FUZZTIME:-30s} $$pkg || failed="$$failed $$t($$pkg)"; \
	  done; done; \
	if [ -n "$$failed" ]; then echo "fuzz failures:$$failed (inputs in each package's testdata/fuzz/)"; exit 1; fi; \
	echo "every fuzz target passed"

.PHONY: bench
bench: deps build ## measure against the performance targets, each timed row against its floor, into docs/benchmarks.json and docs/benchmarks.md (rendered from the JSON), the write spread of docs/scale.md; then the diff, coverage and exports at 100,000 requirements and the cost of suspect marking as tests
	$(GO) run ./infra/cmd/bench -build-dir $(BUILD_DIR) -out docs/benchmarks.md
	$(GO) run ./infra/cmd/scale -doc docs/scale.md
	REQTRACE_BENCH_FULL=1 $(GO) test -count=1 -parallel 1 -timeout 30m -run '^(TestDiffAndExportLarge|TestCoverageLarge|TestSuspectMarkingCost)$$' -v ./shared/httpapi/wikirequirements

.PHONY: soak
soak: deps build ## load + faults on a local stack, then invariants: SOAK_RATE (20/s), SOAK_DURATION (2m), SOAK_SEED; report on stdout and in soak-report.json
	@$(GO) build -o $(BUILD_DIR)/soak ./infra/cmd/soak
	@$(BUILD_DIR)/soak -build-dir $(BUILD_DIR) -out soak-report.json -function-log $(BUILD_DIR)/soak-functions.log

# ---------------------------------------------------------------- deploy
.PHONY: deploy
deploy: ## sam build && sam deploy --guided (needs the SAM CLI and AWS credentials)
	sam build
	sam deploy --guided

.PHONY: clean
clean: ## remove build output
	rm -rf $(BUILD_DIR) bin
