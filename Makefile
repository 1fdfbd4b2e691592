# codebridge: one run_python tool for all your MCP servers.
#
#   make demo    build, make sure a sandbox image exists, run a short demo
#   make soak    ten minutes of mixed load and faults, resource curves printed
#   make test    the linter, unit tests, the runtime's Python tests in the sandbox
#                image, and the end-to-end tests (CODEBRIDGE_E2E=1 makes them required)
#   make lint    golangci-lint (.golangci.yml), default build and kubernetes tag

# The image `codebridge image build` makes, read from its one definition.
IMAGE ?= $(shell sed -n 's/^const DefaultTag = "\(.*\)"$$/\1/p' internal/imagebuild/imagebuild.go)
# The npm reference servers the end-to-end tests run against.
NPM_DIR ?= testdata/npm
# make test requires the end-to-end tests: a missing engine, image or npm
# server fails them instead of skipping them. CODEBRIDGE_E2E=0 lets them skip.
CODEBRIDGE_E2E ?= 1
export CODEBRIDGE_E2E
# The Python MCP SDK, a real client some end-to-end tests drive: a
# virtualenv made by `make pysdk` unless CODEBRIDGE_PYTHON_SDK names a
# Python that has it.
CODEBRIDGE_PYTHON_SDK ?= $(CURDIR)/.cache/pysdk/bin/python
export CODEBRIDGE_PYTHON_SDK
ENGINE ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
GO ?= go
# Build tags: TAGS=kubernetes compiles in the Kubernetes engine (opt-in:
# client-go costs every bridge ~6 MB of idle memory; see docs/scale-out.md).
TAGS ?=
# golangci-lint, pinned: `make lint` installs this version into .cache/bin
# from the Go module proxy unless it is there.
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT = $(CURDIR)/.cache/bin/golangci-lint

.PHONY: build image npm pysdk lint demo test test-go test-python test-e2e vet bench bench-kube soak fuzz clean

build:
	$(GO) build -tags '$(TAGS)' -o bin/codebridge ./cmd/codebridge

# Build the sandbox image from Debian packages unless the engine has it.
image:
	@$(ENGINE) image inspect $(IMAGE) >/dev/null 2>&1 \
	  || $(GO) run ./cmd/codebridge image build --tag $(IMAGE)

# Install the npm reference servers unless they are there.
npm:
	@test -x $(NPM_DIR)/node_modules/.bin/mcp-server-everything \
	  || npm ci --prefix $(NPM_DIR) --no-audit --no-fund

# Install the Python MCP SDK into .cache/pysdk unless the Python above has it.
pysdk:
	@$(CODEBRIDGE_PYTHON_SDK) -c 'import mcp' 2>/dev/null \
	  || { python3 -m venv $(CURDIR)/.cache/pysdk && $(CURDIR)/.cache/pysdk/bin/pip install -q 'mcp>=2.3,<3'; }

demo: build image
	$(GO) run ./examples/demo -bin bin/codebridge

vet:
	$(GO) vet ./...
	$(GO) vet -tags kubernetes ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

# The checks review used to do by hand (.golangci.yml): complexity over 20,
# unused code, error wrapping, shadowing, and the linter's defaults; once as
# the default build and once with the kubernetes tag, so both engines are read.
lint:
	@$(GOLANGCI_LINT) version 2>/dev/null | grep -q 'version $(GOLANGCI_LINT_VERSION:v%=%) ' \
	  || GOBIN=$(CURDIR)/.cache/bin $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	@status=0; \
	  $(GOLANGCI_LINT) run ./... || status=1; \
	  $(GOLANGCI_LINT) run --build-tags kubernetes ./... || status=1; \
	  exit $$status

test: vet lint test-python test-go

test-go: npm pysdk image
	CODEBRIDGE_TEST_IMAGE=$(IMAGE) $(GO) test -tags '$(TAGS)' -count=1 -timeout 30m ./...

# Only the end-to-end tests (CI runs them again per engine:
# CODEBRIDGE_ENGINE=docker, and rootless Podman).
test-e2e: npm pysdk image
	CODEBRIDGE_TEST_IMAGE=$(IMAGE) $(GO) test -tags '$(TAGS)' -count=1 -timeout 30m ./e2e/

# The runtime's unit tests, inside the real sandbox image, hardened like the
# product runs it (read-only root, tmpfs /tmp, uid 65534, no network).
test-python: image
	$(ENGINE) run --rm --network none --read-only --tmpfs /tmp:rw,mode=1777 \
	  --user 65534:65534 --ulimit nofile=1024:1024 --ulimit nproc=512:512 \
	  -e PYTHONDONTWRITEBYTECODE=1 -v $(CURDIR):/src:ro -w /src $(IMAGE) \
	  python3 -m unittest discover -s pyruntime/tests -t pyruntime

# Measure codebridge on this machine against the DESIGN.md targets; prints
# the table and writes it to BENCHMARKS.md (a few minutes).
bench: npm image
	CODEBRIDGE_IMAGE=$(IMAGE) $(GO) run ./bench -out BENCHMARKS.md

# The same on Kubernetes, by itself: the cluster of KUBECONFIG (such as
# test/kubelab's) with the sandbox image on its nodes. Measures a new
# session's first result (cold, from the warm pool), the proxied calls,
# and how many idle sessions a node holds (bench's -idle-sessions Pods
# started, 40 unless IDLE=N says otherwise, their memory read from the
# node's cgroups); prints the table, writes nothing, and
# removes every Pod it made. Not in CI.
bench-kube: npm
	CODEBRIDGE_IMAGE=$(IMAGE) $(GO) run -tags kubernetes ./bench -engine kubernetes $(if $(IDLE),-idle-sessions $(IDLE)) -budget 30m

# Run the bridge for about ten minutes under mixed cells, proxied calls,
# faults and restarts, and print how its memory, descriptors, threads and
# containers moved (not part of CI; SOAK=2m for a shorter run).
SOAK ?= 10m
soak: build image
	CODEBRIDGE_IMAGE=$(IMAGE) $(GO) run ./soak -bin bin/codebridge -duration $(SOAK)

# Run each fuzz target for FUZZTIME executions (100000x) in turn: the frame
# decoder, redaction, the config loader, ${VAR} expansion, the upstream search
# ranking, the JSON-RPC envelope scanner and the stdio transport the bridge
# serves on (held to the go-sdk's IOTransport on any input). Seeds live in testdata/
# beside each package (and run as ordinary tests in make test). The budget is
# a count, not a duration: Go 1.26's fuzz coordinator can report "context
# deadline exceeded" as a failure when a duration ends while a worker is busy
# (golang/go#75804, fixed in Go 1.27), which a loaded machine makes likely.
FUZZTIME ?= 100000x
FUZZ_TARGETS = ./internal/protocol:FuzzDecode ./internal/gate:FuzzRedact ./discovery:FuzzLoad ./discovery:FuzzExpand ./internal/upstream:FuzzRank ./internal/envelope:FuzzOf ./bridge:FuzzStdioTransport

fuzz:
	@for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; \
	  echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
	  $(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

clean:
	rm -rf bin
