# podreload: make demo runs the demo, make test runs every test.
GO        ?= go
BIN       := $(CURDIR)/bin
REVISION  := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
GOBUILD    = CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w -X $(VERSION).Version=0.1.0 -X $(VERSION).Revision=$(REVISION)'
# The tools module (tools/go.mod) builds the real components the tests run
# against; -mod=readonly overrides a GOFLAGS=-mod=mod in the environment.
TOOLS     = cd $(CURDIR)/tools && $(GO) build -mod=readonly -trimpath
VERSION   := github.com/prometheus/common/version
# Prometheus 3.X.Y is Go module version v0.3XX.Y; evaluated only when used.
PROMETHEUS_VERSION = $(shell cd tools && $(GO) list -mod=readonly -m -f '{{.Version}}' github.com/prometheus/prometheus | sed -E 's/^v0\.3([0-9]{2})\.([0-9]+)$$/3.\1.\2/')
# Alertmanager has its own module (tools/alertmanager/go.mod, see there why).
ALERTMANAGER_VERSION = $(shell cd tools/alertmanager && $(GO) list -mod=readonly -m -f '{{.Version}}' github.com/prometheus/alertmanager | sed 's/^v//')
PEER_VERSION = $(shell cd tools && $(GO) list -mod=readonly -m -f '{{.Version}}' github.com/prometheus-operator/prometheus-operator | sed 's/^v//')
# The control plane has its own module (tools/controlplane/go.mod, see there why).
KUBERNETES_VERSION = $(shell cd tools/controlplane && $(GO) list -mod=readonly -m -f '{{.Version}}' k8s.io/kubernetes)
KUBE_VERSION_FLAGS = $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,-X $(pkg).gitVersion=$(KUBERNETES_VERSION) -X $(pkg).gitMajor=$(word 1,$(subst ., ,$(KUBERNETES_VERSION:v%=%))) -X $(pkg).gitMinor=$(word 2,$(subst ., ,$(KUBERNETES_VERSION))) -X $(pkg).gitTreeState=clean)
BINARIES  := config-reloader rules-reloader controller
SOURCES   := $(shell find . -name '*.go' -not -path './tools/*' -not -name '*_test.go') go.mod go.sum
export PODRELOAD_BIN := $(BIN)

.DEFAULT_GOAL := help
.PHONY: help build test unit e2e lint bench demo tools controlplane fuzz clean generate

help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: $(addprefix bin/,$(BINARIES)) ## Build the podreload binaries into bin/.

bin/%: $(SOURCES)
	$(GOBUILD) -o $@ ./cmd/$*

bin/memfloor: $(SOURCES)
	$(GOBUILD) -o $@ ./internal/memfloor

tools: bin/prometheus bin/promtool bin/projector bin/alertmanager bin/controller-gen bin/kube-apiserver bin/etcd ## Build the real components tests use (cached in bin/).

bin/prometheus bin/promtool: tools/go.mod tools/go.sum
	$(TOOLS) -ldflags '-X $(VERSION).Version=$(PROMETHEUS_VERSION)' -o $(CURDIR)/$@ github.com/prometheus/prometheus/cmd/$(notdir $@)

bin/alertmanager: tools/alertmanager/go.mod tools/alertmanager/go.sum
	cd $(CURDIR)/tools/alertmanager && $(GO) build -mod=readonly -trimpath -ldflags '-X $(VERSION).Version=$(ALERTMANAGER_VERSION)' -o $(CURDIR)/$@ github.com/prometheus/alertmanager/cmd/alertmanager

bin/controller-gen: tools/controller-gen/go.mod tools/controller-gen/go.sum
	cd $(CURDIR)/tools/controller-gen && $(GO) build -mod=readonly -trimpath -o $(CURDIR)/$@ sigs.k8s.io/controller-tools/cmd/controller-gen

bin/golangci-lint: tools/golangci-lint/go.mod tools/golangci-lint/go.sum
	cd $(CURDIR)/tools/golangci-lint && $(GO) build -mod=readonly -trimpath -o $(CURDIR)/$@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

controlplane: bin/kube-apiserver bin/etcd ## Build kube-apiserver and etcd for envtest (KUBEBUILDER_ASSETS=bin).

# Static like the upstream release binaries; etcd's version is in its source.
bin/kube-apiserver: tools/controlplane/go.mod tools/controlplane/go.sum
	cd $(CURDIR)/tools/controlplane && CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -ldflags '$(KUBE_VERSION_FLAGS)' -o $(CURDIR)/$@ k8s.io/kubernetes/cmd/kube-apiserver

bin/etcd: tools/controlplane/go.mod tools/controlplane/go.sum
	cd $(CURDIR)/tools/controlplane && CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -o $(CURDIR)/$@ go.etcd.io/etcd/server/v3

bin/projector: tools/go.mod tools/go.sum $(wildcard tools/projector/*.go)
	$(TOOLS) -o $(CURDIR)/$@ ./projector

bin/prometheus-config-reloader: tools/go.mod tools/go.sum
	$(TOOLS) -ldflags '-X $(VERSION).Version=$(PEER_VERSION)' -o $(CURDIR)/$@ github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader

# The upstream kinds the controller reads, generated from the prometheus-operator
# Go types go.mod requires; api/v1alpha1/crd_test.go runs the same commands.
UPSTREAM_CRDS := servicemonitors podmonitors prometheusrules

generate: bin/controller-gen ## Regenerate api/v1alpha1 deepcopy code and deploy/crds/.
	rm -f deploy/crds/*.yaml
	$(BIN)/controller-gen object crd paths=./api/... output:crd:dir=deploy/crds
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(BIN)/controller-gen crd paths=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1 output:crd:dir=$$tmp && \
	cp $(UPSTREAM_CRDS:%=$$tmp/monitoring.coreos.com_%.yaml) deploy/crds/

test: lint build tools ## Run the linters, then unit and e2e tests with the race detector.
	$(GO) test -race -count=1 ./...

unit: tools ## Run the unit tests only.
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /e2e)

e2e: build tools ## Run the e2e tests against real Prometheus.
	$(GO) test -race -count=1 -v ./e2e/

fuzz: ## Fuzz the $(VAR) expansion for a minute.
	$(GO) test -run=NONE -fuzz=FuzzExpand -fuzztime=60s ./envsubst/

lint: bin/golangci-lint ## gofmt, go vet and tidy checks, then golangci-lint with the house rules (.golangci.yml).
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	cd tools && $(GO) vet ./...
	$(GO) mod tidy -diff
	cd tools && $(GO) mod tidy -diff
	cd tools/alertmanager && $(GO) mod tidy -diff
	cd tools/controller-gen && $(GO) mod tidy -diff
	cd tools/controlplane && $(GO) mod tidy -diff
	cd tools/golangci-lint && $(GO) mod tidy -diff
	$(BIN)/golangci-lint run ./...
	cd tools && $(BIN)/golangci-lint run ./...

bench: build tools bin/prometheus-config-reloader bin/memfloor ## Measure the reloaders, the controller and the pipeline; writes docs/benchmarks.md.
	cd tools && $(GO) run ./benchreload -bin $(BIN) -out $(CURDIR)/docs
	$(GO) test -run NONE -bench . -benchmem ./controller/
	$(GO) test -run NONE -bench Scale -benchtime 1x ./cmd/controller/
	PODRELOAD_E2E_BIN=$(BIN) PODRELOAD_BENCH_DOCS=$(CURDIR)/docs/benchmarks.md $(GO) test -run NONE -bench Pipeline -benchtime 1x ./e2e/

demo: tools ## Run the demo: a custom resource change through the controller to a real Prometheus, narrated.
	$(GO) test -count=1 -run '^TestDemo$$' -v ./e2e/

clean: ## Remove bin/.
	rm -rf bin
