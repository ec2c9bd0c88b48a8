# podreload: make demo runs the demo, make test runs every test.
GO        ?= go
BIN       := $(CURDIR)/bin
REVISION  := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
PODRELOAD_VERSION := 0.1.0
GOBUILD    = CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w -X $(VERSION).Version=$(PODRELOAD_VERSION) -X $(VERSION).Revision=$(REVISION)'
# The tools module (tools/go.mod) builds the real components the tests run
# against; -mod=readonly overrides a GOFLAGS=-mod=mod in the environment.
TOOLS     = cd $(CURDIR)/tools && $(GO) build -mod=readonly -trimpath
VERSION   := github.com/prometheus/common/version
# Prometheus 3.X.Y is Go module version v0.3XX.Y; evaluated only when used.
PROMETHEUS_VERSION = $(shell cd tools && $(GO) list -mod=readonly -m -f '{{.Version}}' github.com/prometheus/prometheus | sed -E 's/^v0\.3([0-9]{2})\.([0-9]+)$$/3.\1.\2/')
# Alertmanager has its own module (tools/alertmanager/go.mod, see there why).
ALERTMANAGER_VERSION = $(shell cd tools/alertmanager && $(GO) list -mod=readonly -m -f '{{.Version}}' github.com/prometheus/alertmanager | sed 's/^v//')
# An Alertmanager older than v0.30, for the node's takeover of one
# (tools/alertmanager-v0.25/go.mod, see there why v0.25).
ALERTMANAGER_V025_VERSION = $(shell cd tools/alertmanager-v0.25 && $(GO) list -mod=readonly -m -f '{{.Version}}' github.com/prometheus/alertmanager | sed 's/^v//')
# The oldest v2 Prometheus built here (tools/prometheus-v2/go.mod, see
# there why v2.35): Prometheus 2.X.Y is Go module version v0.X.Y.
PROMETHEUS_V2_VERSION = $(shell cd tools/prometheus-v2 && $(GO) list -mod=readonly -m -f '{{.Version}}' github.com/prometheus/prometheus | sed -E 's/^v0\.([0-9]+)\.([0-9]+)$$/2.\1.\2/')
PEER_VERSION = $(shell cd tools && $(GO) list -mod=readonly -m -f '{{.Version}}' github.com/prometheus-operator/prometheus-operator | sed 's/^v//')
# Thanos, for the sidecar of the node's takeover test (tools/thanos/go.mod,
# see there why a module of its own).
# Thanos' own build tags (its .promu.yml): its label code needs the slice
# representation of Prometheus' labels; built without it, the sidecar's
# Store API panics on every series.
THANOS_TAGS = netgo,slicelabels
THANOS_VERSION = $(shell cd tools/thanos && $(GO) list -mod=readonly -m -f '{{.Version}}' github.com/thanos-io/thanos | sed 's/^v//')
# The control plane has its own module (tools/controlplane/go.mod, see there why).
KUBERNETES_VERSION = $(shell cd tools/controlplane && $(GO) list -mod=readonly -m -f '{{.Version}}' k8s.io/kubernetes)
KUBE_VERSION_FLAGS = $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,-X $(pkg).gitVersion=$(KUBERNETES_VERSION) -X $(pkg).gitMajor=$(word 1,$(subst ., ,$(KUBERNETES_VERSION:v%=%))) -X $(pkg).gitMinor=$(word 2,$(subst ., ,$(KUBERNETES_VERSION))) -X $(pkg).gitTreeState=clean)
BINARIES  := config-reloader rules-reloader controller collector
SOURCES   := $(shell find . -name '*.go' -not -path './tools/*' -not -name '*_test.go') go.mod go.sum
export PODRELOAD_BIN := $(BIN)

.DEFAULT_GOAL := help
.PHONY: help build test prefetch unit e2e lint bench demo demo-bins demo-controlplane demo-prometheus tools controlplane fuzz clean generate node-bins debian-node-packages node-up node-down images host-images

help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: $(addprefix bin/,$(BINARIES)) ## Build the podreload binaries into bin/.

# The previous release, for the upgrade tests: CHANGELOG.md names the commit
# each release was cut from, and this builds the newest one's controller
# and config-reloader from the git history (a clone has it: no download)
# into bin/previous/, with that release's version, beside its CRDs
# (bin/previous/crds/) and the objects of its example and its
# configuration test cases (bin/previous/objects/).
PREVIOUS_COMMIT = $(shell sed -n 's/^Cut from commit \([0-9a-f]\{40\}\).*/\1/p' CHANGELOG.md | head -1)
PREVIOUS_VERSION = $(shell sed -n 's/^## \([0-9][0-9.]*\)$$/\1/p' CHANGELOG.md | head -1)
bin/previous/controller bin/previous/config-reloader &: CHANGELOG.md
	@test -n "$(PREVIOUS_COMMIT)" || { echo "CHANGELOG.md names no commit of a release"; exit 1; }
	rm -rf bin/previous/src && mkdir -p bin/previous/src
	git archive $(PREVIOUS_COMMIT) | tar -x -C bin/previous/src
	cd bin/previous/src && CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w -X $(VERSION).Version=$(PREVIOUS_VERSION) -X $(VERSION).Revision=$(PREVIOUS_COMMIT)' -o $(BIN)/previous/ ./cmd/controller ./cmd/config-reloader
	rm -rf bin/previous/crds bin/previous/objects && mkdir -p bin/previous/crds bin/previous/objects
	cp bin/previous/src/deploy/crds/*.yaml bin/previous/crds/
	cp bin/previous/src/deploy/example/*.yaml bin/previous/src/controller/prometheus/testdata/operator/config/*.yaml bin/previous/objects/
	rm -f bin/previous/objects/kustomization.yaml
	rm -rf bin/previous/src

$(BINARIES:%=bin/%): bin/%: $(SOURCES)
	$(GOBUILD) -o $@ ./cmd/$*

bin/memfloor: $(SOURCES)
	$(GOBUILD) -o $@ ./internal/memfloor

tools: bin/prometheus bin/promtool bin/projector bin/opconfig bin/alertmanager bin/controller-gen bin/helm bin/kube-apiserver bin/etcd bin/kubectl bin/prometheus-operator bin/prometheus-v2.35 bin/thanos-storequery ## Build the real components tests use (cached in bin/).

# Static, as Prometheus' release binaries are: the packages compile once for
# these and for the host's image (bin/linux-$(HOST_ARCH)/prometheus), where a
# cgo build compiled all of Prometheus twice (some 8 minutes of a cold CI run).
# With Prometheus' own build tags, only the service discoveries the controller
# renders (kubernetes_sd_configs; dns for ScrapeConfigs) are compiled in:
# static and file discovery are always there. The other 23 (AWS, Azure, GCE,
# OpenStack, OCI...) are 234 packages, among them the largest SDKs.
PROMETHEUS_TAGS := remove_all_sd,enable_kubernetes_sd,enable_dns_sd
# One `go build` per module for the binaries built alike (grouped targets,
# &:): it links them side by side, where one build each left a core idle
# during every link.
PROMBUILD = cd $(CURDIR)/tools && CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -tags $(PROMETHEUS_TAGS) -ldflags '-s -w -X $(VERSION).Version=$(PROMETHEUS_VERSION)'
bin/prometheus bin/promtool &: tools/go.mod tools/go.sum
	$(PROMBUILD) -o $(CURDIR)/bin/ github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool

# Prometheus v2.35.0 for e2e's TestOldPrometheusV2, static. Its service
# discoveries have no build tags yet: all of them are compiled in.
# A client of the Thanos Store API (Thanos' own storepb), for the node's
# test of the sidecar taken over (tools/thanos/storequery).
bin/thanos-storequery: tools/thanos/go.mod tools/thanos/go.sum tools/thanos/storequery/main.go
	cd $(CURDIR)/tools/thanos && CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -tags $(THANOS_TAGS) -o $(CURDIR)/$@ ./storequery

bin/prometheus-v2.35: tools/prometheus-v2/go.mod tools/prometheus-v2/go.sum
	cd $(CURDIR)/tools/prometheus-v2 && CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -ldflags '-s -w -X $(VERSION).Version=$(PROMETHEUS_V2_VERSION)' -o $(CURDIR)/$@ github.com/prometheus/prometheus/cmd/prometheus

# Alertmanager at the version tools/alertmanager/go.mod requires, built
# from a copy of its module's source. Every release after v0.31.1 embeds
# its generated web UI (`//go:embed app/dist` in ui/web.go), which the
# published module does not hold: `go build` of its cmd/alertmanager fails
# ("pattern app/dist: no matching files found"). $(alertmanager-src)
# copies the module's source (read-only in the module cache) once into
# bin/src/alertmanager-v<version>, adds a placeholder UI there (one page
# saying the UI is not built here, ui/app/dist/index.html, which web.go
# serves only compressed: gzipped, and as the one uncompressed meta-block
# of a brotli stream, what a browser asks for first, for want of a brotli
# tool), and the build runs inside that copy, with upstream's
# own go.mod and go.sum: everything but the UI is upstream's code at
# upstream's pins. A cold build of bin/alertmanager took 2 min 2 s here
# (72 s of CPU, 2 cores shared with another build); the copy, 0.1 s.
ALERTMANAGER_SRC = $(CURDIR)/bin/src/alertmanager-v$(ALERTMANAGER_VERSION)
ALERTMANAGER_UI := <!doctype html><title>Alertmanager</title><p>This Alertmanager was built by podreload from the module proxy, without its web UI: use the API (/api/v2/) or amtool.</p>
define alertmanager-src
@test -d $(ALERTMANAGER_SRC) || { set -e; mkdir -p $(CURDIR)/bin/src; \
	mod=$$(cd $(CURDIR)/tools/alertmanager && $(GO) mod download github.com/prometheus/alertmanager && $(GO) list -mod=readonly -m -f '{{.Dir}}' github.com/prometheus/alertmanager); \
	tmp=$$(mktemp -d $(CURDIR)/bin/src/.alertmanager.XXXXXX); cp -R "$$mod"/. "$$tmp"; chmod -R u+w "$$tmp"; chmod 755 "$$tmp"; \
	mkdir -p "$$tmp/ui/app/dist"; page="$$tmp/ui/app/dist/index.html"; printf '%s\n' '$(ALERTMANAGER_UI)' > "$$page"; \
	gzip -9nk "$$page"; m=$$(($$(wc -c < "$$page") - 1)); \
	{ printf "$$(printf '\\%03o\\%03o\\%03o' $$(((m & 15) << 4)) $$(((m >> 4) & 255)) $$((((m >> 12) & 15) | 16)))"; \
	cat "$$page"; printf '\003'; } > "$$page.br"; \
	mv -T "$$tmp" $(ALERTMANAGER_SRC) 2>/dev/null || rm -rf "$$tmp"; echo "copied $$mod to $(ALERTMANAGER_SRC), UI placeholder added"; }
endef
bin/alertmanager: tools/alertmanager/go.mod tools/alertmanager/go.sum
	$(alertmanager-src)
	@# Static and stripped as bin/linux-<arch>/alertmanager: the two builds
	@# then share every compiled package (with cgo, the host's build
	@# compiled them all once more).
	cd $(ALERTMANAGER_SRC) && CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -ldflags '-s -w -X $(VERSION).Version=$(ALERTMANAGER_VERSION)' -o $(CURDIR)/$@ ./cmd/alertmanager

bin/controller-gen: tools/controller-gen/go.mod tools/controller-gen/go.sum
	cd $(CURDIR)/tools/controller-gen && $(GO) build -mod=readonly -trimpath -o $(CURDIR)/$@ sigs.k8s.io/controller-tools/cmd/controller-gen

# Helm v3 for the chart's tests (tools/helm/go.mod), with the version and
# the Kubernetes version (of its client-go: v0.X.Y is 1.X) that Helm's own
# build sets: `helm template` renders for that version, `helm lint` checks
# deprecated APIs against it.
HELM_VERSION = $(shell cd tools/helm && $(GO) list -mod=readonly -m -f '{{.Version}}' helm.sh/helm/v3)
HELM_KUBE_MINOR = $(shell cd tools/helm && $(GO) list -mod=readonly -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)
HELM_FLAGS = -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) $(foreach pkg,helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules,-X $(pkg).k8sVersionMajor=1 -X $(pkg).k8sVersionMinor=$(HELM_KUBE_MINOR))
bin/helm: tools/helm/go.mod tools/helm/go.sum
	cd $(CURDIR)/tools/helm && CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -ldflags '-s -w $(HELM_FLAGS)' -o $(CURDIR)/$@ helm.sh/helm/v3/cmd/helm

bin/golangci-lint: tools/golangci-lint/go.mod tools/golangci-lint/go.sum
	cd $(CURDIR)/tools/golangci-lint && $(GO) build -mod=readonly -trimpath -o $(CURDIR)/$@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

controlplane: bin/kube-apiserver bin/etcd ## Build kube-apiserver and etcd for envtest (KUBEBUILDER_ASSETS=bin).

# Static like the upstream release binaries; etcd's version is in its source.
bin/etcd: tools/controlplane/go.mod tools/controlplane/go.sum
	cd $(CURDIR)/tools/controlplane && CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -o $(CURDIR)/$@ go.etcd.io/etcd/server/v3

# The rest of a node (internal/testenv/node): Kubernetes from the control
# plane's module, containerd v2 and CoreDNS from their own
# (tools/containerd/go.mod, tools/coredns/go.mod, see there why), runc, CNI
# plugins and iptables from Debian.
KUBE_NODE_BINARIES := kubelet kube-controller-manager kube-scheduler kube-proxy
CONTAINERD_BINARIES := containerd containerd-shim-runc-v2 ctr
DEBIAN_NODE_PACKAGES := runc containernetworking-plugins iptables conntrack
node-bins: bin/kube-apiserver bin/etcd $(KUBE_NODE_BINARIES:%=bin/%) $(CONTAINERD_BINARIES:%=bin/%) bin/coredns debian-node-packages ## Build and install what a node needs.

# kubectl: e2e runs `kubectl wait --for=condition=ConfigApplied` as a user
# does; `make node-up` prints how to use it. All of Kubernetes' binaries in
# one build (see bin/prometheus): the API server alone is built with the rest.
KUBE_BINARIES := kube-apiserver kubectl $(KUBE_NODE_BINARIES)
KUBEBUILD = cd $(CURDIR)/tools/controlplane && CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -ldflags '$(KUBE_VERSION_FLAGS)'
$(KUBE_BINARIES:%=bin/%) &: tools/controlplane/go.mod tools/controlplane/go.sum
	$(KUBEBUILD) -o $(CURDIR)/bin/ $(KUBE_BINARIES:%=k8s.io/kubernetes/cmd/%)

# The tags leave out the snapshotters that need cgo and host libraries.
$(CONTAINERD_BINARIES:%=bin/%) &: tools/containerd/go.mod tools/containerd/go.sum
	cd $(CURDIR)/tools/containerd && CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -tags no_btrfs,no_devmapper,no_zfs -o $(CURDIR)/bin/ $(CONTAINERD_BINARIES:%=github.com/containerd/containerd/v2/cmd/%)

# The node's cluster DNS: CoreDNS with the plugins tools/coredns/main.go
# imports only, static.
bin/coredns: tools/coredns/go.mod tools/coredns/go.sum tools/coredns/main.go
	cd $(CURDIR)/tools/coredns && CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -ldflags '-s -w' -o $(CURDIR)/$@ .

# The node runs in the background until `make node-down`; bin/node-up.log
# has its log.
node-up: node-bins host-images bin/nodeup bin/kubectl ## Start a single-machine Kubernetes node (root; stops with make node-down).
	@rm -f bin/node-up.log; setsid $(BIN)/nodeup -kubeconfig $(BIN)/node.kubeconfig > bin/node-up.log 2>&1 & echo $$! > bin/node-up.pid; \
	while ! grep -q '^export KUBECONFIG' bin/node-up.log; do \
		kill -0 $$(cat bin/node-up.pid) 2>/dev/null || { cat bin/node-up.log; rm -f bin/node-up.pid; exit 1; }; sleep 1; \
	done; grep '^export KUBECONFIG' bin/node-up.log

node-down: bin/nodeup ## Stop the node of make node-up and remove everything it left.
	@if [ -f bin/node-up.pid ]; then pid=$$(cat bin/node-up.pid); kill $$pid 2>/dev/null; \
		while kill -0 $$pid 2>/dev/null; do sleep 1; done; rm -f bin/node-up.pid; tail -3 bin/node-up.log; fi
	$(BIN)/nodeup -clean

bin/nodeup: $(SOURCES)
	$(GOBUILD) -o $@ ./internal/testenv/node/nodeup

debian-node-packages:
	@missing=$$(for p in $(DEBIAN_NODE_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "installing $$missing"; apt-get update -qq && apt-get install -y -qq $$missing; fi

bin/projector: tools/go.mod tools/go.sum $(wildcard tools/projector/*.go)
	$(TOOLS) -o $(CURDIR)/$@ ./projector

# prometheus-operator's own configuration generators, for the differential
# tests of the takeover: Prometheus' (controller/prometheus
# TestOperatorConfig) and, with --alertmanager, Alertmanager's
# (controller/alertmanager/amconfig TestOperatorConfig).
bin/opconfig: tools/go.mod tools/go.sum $(wildcard tools/opconfig/*.go)
	$(TOOLS) -o $(CURDIR)/$@ ./opconfig

bin/prometheus-config-reloader: tools/go.mod tools/go.sum
	$(TOOLS) -ldflags '-X $(VERSION).Version=$(PEER_VERSION)' -o $(CURDIR)/$@ github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader

# prometheus-operator's operator at the pinned version, for e2e/node's
# TestOperatorOnNode and the takeover's acceptance (issue 26): it runs as a
# process on the node. Static, as its release binary is. The version also
# makes the prometheus-config-reloader image it names by default (that of
# bin/images/prometheus-config-reloader-<arch>.tar below).
bin/prometheus-operator: tools/go.mod tools/go.sum
	cd $(CURDIR)/tools && CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -ldflags '-s -w -X $(VERSION).Version=$(PEER_VERSION)' -o $(CURDIR)/$@ github.com/prometheus-operator/prometheus-operator/cmd/operator

# OCI image archives without Docker (tools/images, go-containerregistry):
# bin/images/<image>-<arch>.tar, named as deploy/ and the controller's
# defaults name them, each with its CycloneDX SBOM (<image>-<arch>.cdx.json,
# the Go modules of its binaries) and its digest (<image>-<arch>.digest,
# printed too). The Dockerfile describes the podreload image too
# (internal/testenv/node/images_test.go checks they agree).
IMAGE_ARCHES := amd64 arm64
HOST_ARCH    := $(shell $(GO) env GOARCH)
IMAGES       := podreload collector prometheus alertmanager pause
PODRELOAD_IMAGE  := ghcr.io/podreload/podreload:$(PODRELOAD_VERSION)
# The collector alone, its entrypoint: charts that run k8s-sidecar (Grafana's
# sidecar.image) set no command, so the image's entrypoint must be it
# (docs/collector.md).
COLLECTOR_IMAGE  := ghcr.io/podreload/collector:$(PODRELOAD_VERSION)
PROMETHEUS_IMAGE  = quay.io/prometheus/prometheus:v$(PROMETHEUS_VERSION)
ALERTMANAGER_IMAGE = quay.io/prometheus/alertmanager:v$(ALERTMANAGER_VERSION)
ALERTMANAGER_V025_IMAGE = quay.io/prometheus/alertmanager:v$(ALERTMANAGER_V025_VERSION)
PAUSE_IMAGE      := podreload.dev/pause:1
IMAGEBUILD        = cd $(CURDIR)/tools/images && $(GO) run -mod=readonly . -platform linux/$*
IMAGEBUILD_SOURCES := $(filter-out %_test.go,$(wildcard tools/images/*.go)) tools/images/go.mod tools/images/go.sum

images: $(foreach a,$(IMAGE_ARCHES),$(IMAGES:%=bin/images/%-$(a).tar)) ## Build the OCI image archives of every platform into bin/images/.

# The node's images (internal/testenv/node imports them): ours, and test
# images only: for prometheus-operator's operator (e2e/node's
# TestOperatorOnNode) the prometheus-config-reloader image it names, and
# Alertmanager v0.25.0 for the takeover of an Alertmanager older than v0.30
# (e2e/node's TestAlertmanagerTakeoverOnNode), and a reverse proxy in
# front of a Prometheus with listenLocal, and Thanos for the sidecar of
# another (e2e/node's TestTakeoverOnNode).
host-images: $(IMAGES:%=bin/images/%-$(HOST_ARCH).tar) bin/images/prometheus-config-reloader-$(HOST_ARCH).tar bin/images/alertmanager-v0.25-$(HOST_ARCH).tar bin/images/proxy-$(HOST_ARCH).tar bin/images/thanos-$(HOST_ARCH).tar

# Kept: they are what the images hold.
.SECONDARY: $(foreach a,$(IMAGE_ARCHES),$(addprefix bin/linux-$(a)/,$(BINARIES) prometheus alertmanager alertmanager-v0.25 pause prometheus-config-reloader proxy thanos))

bin/linux-%/config-reloader bin/linux-%/rules-reloader bin/linux-%/controller bin/linux-%/collector: $(SOURCES)
	GOOS=linux GOARCH=$* $(GOBUILD) -o $(CURDIR)/bin/linux-$*/ ./cmd/...

bin/linux-%/pause: internal/testenv/node/pause/main.go
	GOOS=linux GOARCH=$* $(GOBUILD) -o $@ ./internal/testenv/node/pause

# Static, as bin/prometheus.
bin/linux-%/prometheus: tools/go.mod tools/go.sum
	cd $(CURDIR)/tools && GOOS=linux GOARCH=$* CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -tags $(PROMETHEUS_TAGS) -ldflags '-s -w -X $(VERSION).Version=$(PROMETHEUS_VERSION)' -o $(CURDIR)/$@ github.com/prometheus/prometheus/cmd/prometheus

bin/images/podreload-%.tar: bin/linux-%/config-reloader bin/linux-%/rules-reloader bin/linux-%/controller bin/linux-%/collector $(IMAGEBUILD_SOURCES)
	@mkdir -p $(@D)
	$(IMAGEBUILD) -out $(CURDIR)/$@ -name $(PODRELOAD_IMAGE) -user 65532:65532 -entrypoint /bin/config-reloader \
		$(foreach b,$(BINARIES),-file /bin/$(b)=$(CURDIR)/bin/linux-$*/$(b)) -file /etc/ssl/certs/ca-certificates.crt=/etc/ssl/certs/ca-certificates.crt

# The previous release's image, for the node's upgrade test: its
# controller and config-reloader (bin/previous/, static, of this machine's
# platform), under a tag of its own.
PREVIOUS_IMAGE := ghcr.io/podreload/podreload:previous
bin/images/podreload-previous-%.tar: bin/previous/controller $(IMAGEBUILD_SOURCES)
	@mkdir -p $(@D)
	$(IMAGEBUILD) -out $(CURDIR)/$@ -name $(PREVIOUS_IMAGE) -user 65532:65532 -entrypoint /bin/config-reloader \
		-file /bin/controller=$(CURDIR)/bin/previous/controller -file /bin/config-reloader=$(CURDIR)/bin/previous/config-reloader \
		-file /etc/ssl/certs/ca-certificates.crt=/etc/ssl/certs/ca-certificates.crt

bin/images/collector-%.tar: bin/linux-%/collector $(IMAGEBUILD_SOURCES)
	@mkdir -p $(@D)
	$(IMAGEBUILD) -out $(CURDIR)/$@ -name $(COLLECTOR_IMAGE) -user 65532:65532 -entrypoint /bin/collector \
		-file /bin/collector=$(CURDIR)/$< -file /etc/ssl/certs/ca-certificates.crt=/etc/ssl/certs/ca-certificates.crt

# As the upstream image: user nobody, working directory /prometheus.
bin/images/prometheus-%.tar: bin/linux-%/prometheus $(IMAGEBUILD_SOURCES)
	@mkdir -p $(@D)
	$(IMAGEBUILD) -out $(CURDIR)/$@ -name $(PROMETHEUS_IMAGE) -user 65534:65534 -workdir /prometheus -entrypoint /bin/prometheus \
		-file /bin/prometheus=$(CURDIR)/$< -file /etc/ssl/certs/ca-certificates.crt=/etc/ssl/certs/ca-certificates.crt

# Static, from bin/alertmanager's copy of the source (see there why).
bin/linux-%/alertmanager: tools/alertmanager/go.mod tools/alertmanager/go.sum
	$(alertmanager-src)
	cd $(ALERTMANAGER_SRC) && GOOS=linux GOARCH=$* CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -ldflags '-s -w -X $(VERSION).Version=$(ALERTMANAGER_VERSION)' -o $(CURDIR)/$@ ./cmd/alertmanager

# As the upstream image (its Dockerfile): user nobody, /etc/alertmanager
# with a default configuration and /alertmanager owned by nobody, working
# directory /alertmanager, the same entrypoint and default arguments.
# prometheus-operator and the controller run it with their own arguments.
# $(call alertmanager-image,NAME) builds the image NAME of the binary $<.
alertmanager-image = $(IMAGEBUILD) -out $(CURDIR)/$@ -name $(1) -user 65534:65534 -workdir /alertmanager -entrypoint /bin/alertmanager \
		-cmd --config.file=/etc/alertmanager/alertmanager.yml -cmd --storage.path=/alertmanager \
		-file /bin/alertmanager=$(CURDIR)/$< -file /etc/alertmanager/alertmanager.yml=$(CURDIR)/tools/images/alertmanager.yml \
		-dir /alertmanager -chown /etc/alertmanager=65534:65534 -chown /alertmanager=65534:65534 \
		-file /etc/ssl/certs/ca-certificates.crt=/etc/ssl/certs/ca-certificates.crt
bin/images/alertmanager-%.tar: bin/linux-%/alertmanager tools/images/alertmanager.yml $(IMAGEBUILD_SOURCES)
	@mkdir -p $(@D)
	$(call alertmanager-image,$(ALERTMANAGER_IMAGE))

# Alertmanager v0.25.0, static, and its image, laid out as the one above.
# (Its archive also matches bin/images/alertmanager-%.tar: GNU make takes
# the rule of the shorter stem, this one.)
bin/linux-%/alertmanager-v0.25: tools/alertmanager-v0.25/go.mod tools/alertmanager-v0.25/go.sum
	cd $(CURDIR)/tools/alertmanager-v0.25 && GOOS=linux GOARCH=$* CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -ldflags '-s -w -X $(VERSION).Version=$(ALERTMANAGER_V025_VERSION)' -o $(CURDIR)/$@ github.com/prometheus/alertmanager/cmd/alertmanager

bin/images/alertmanager-v0.25-%.tar: bin/linux-%/alertmanager-v0.25 tools/images/alertmanager.yml $(IMAGEBUILD_SOURCES)
	@mkdir -p $(@D)
	$(call alertmanager-image,$(ALERTMANAGER_V025_IMAGE))

# prometheus-operator's, at the pinned version, named as the operator names
# it by default; as the upstream image: user nobody. (Its archive also
# matches bin/images/prometheus-%.tar above: GNU make takes the rule of the
# shorter stem, this one.)
PEER_RELOADER_IMAGE = quay.io/prometheus-operator/prometheus-config-reloader:v$(PEER_VERSION)
bin/linux-%/prometheus-config-reloader: tools/go.mod tools/go.sum
	cd $(CURDIR)/tools && GOOS=linux GOARCH=$* CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -ldflags '-s -w -X $(VERSION).Version=$(PEER_VERSION)' -o $(CURDIR)/$@ github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader

bin/images/prometheus-config-reloader-%.tar: bin/linux-%/prometheus-config-reloader $(IMAGEBUILD_SOURCES)
	@mkdir -p $(@D)
	$(IMAGEBUILD) -out $(CURDIR)/$@ -name $(PEER_RELOADER_IMAGE) -user 65534:65534 -entrypoint /bin/prometheus-config-reloader -file /bin/prometheus-config-reloader=$(CURDIR)/$<

bin/images/pause-%.tar: bin/linux-%/pause $(IMAGEBUILD_SOURCES)
	@mkdir -p $(@D)
	$(IMAGEBUILD) -out $(CURDIR)/$@ -name $(PAUSE_IMAGE) -user 65535:65535 -entrypoint /pause -file /pause=$(CURDIR)/$<

# A test image: a reverse proxy in kube-rbac-proxy's place, for the pods
# of a Prometheus with listenLocal (internal/testenv/node/proxy).
PROXY_IMAGE := podreload.dev/proxy:1
bin/linux-%/proxy: internal/testenv/node/proxy/main.go
	GOOS=linux GOARCH=$* $(GOBUILD) -o $@ ./internal/testenv/node/proxy

bin/images/proxy-%.tar: bin/linux-%/proxy $(IMAGEBUILD_SOURCES)
	@mkdir -p $(@D)
	$(IMAGEBUILD) -out $(CURDIR)/$@ -name $(PROXY_IMAGE) -user 65534:65534 -entrypoint /proxy -file /proxy=$(CURDIR)/$<

# Thanos, static, from tools/thanos; as the upstream image (its
# Dockerfile): user nobody, entrypoint /bin/thanos. A cold build of it took
# about 5 minutes here.
THANOS_IMAGE = quay.io/thanos/thanos:v$(THANOS_VERSION)
bin/linux-%/thanos: tools/thanos/go.mod tools/thanos/go.sum
	cd $(CURDIR)/tools/thanos && GOOS=linux GOARCH=$* CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath -tags $(THANOS_TAGS) -ldflags '-s -w -X $(VERSION).Version=$(THANOS_VERSION)' -o $(CURDIR)/$@ github.com/thanos-io/thanos/cmd/thanos

bin/images/thanos-%.tar: bin/linux-%/thanos $(IMAGEBUILD_SOURCES)
	@mkdir -p $(@D)
	$(IMAGEBUILD) -out $(CURDIR)/$@ -name $(THANOS_IMAGE) -user 65534:65534 -entrypoint /bin/thanos \
		-file /bin/thanos=$(CURDIR)/$< -file /etc/ssl/certs/ca-certificates.crt=/etc/ssl/certs/ca-certificates.crt

# The upstream kinds the controller reads, generated from the prometheus-operator
# Go types go.mod requires (ScrapeConfig is monitoring.coreos.com/v1alpha1);
# api/v1alpha1/crd_test.go runs the same commands.
UPSTREAM_CRDS := servicemonitors podmonitors probes prometheusrules scrapeconfigs prometheuses prometheusagents alertmanagers alertmanagerconfigs
UPSTREAM_APIS := github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1 github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1

# The chart's crds/ are copies of deploy/crds/ (deploy/chart_test.go checks
# they are the same bytes); `controller crds` embeds deploy/crds/.
generate: bin/controller-gen ## Regenerate api/v1alpha1 deepcopy code, deploy/crds/ and the chart's copy.
	rm -f deploy/crds/*.yaml
	$(BIN)/controller-gen object crd paths=./api/... output:crd:dir=deploy/crds
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(BIN)/controller-gen crd $(UPSTREAM_APIS:%=paths=%) output:crd:dir=$$tmp && \
	cp $(UPSTREAM_CRDS:%=$$tmp/monitoring.coreos.com_%.yaml) deploy/crds/
	rm -f charts/podreload/crds/*.yaml
	cp deploy/crds/*.yaml charts/podreload/crds/

# make test's first step: the modules of every component the tests build,
# downloaded in the background while lint and the first builds use the
# cores. A cold download of them all took 6.7 minutes here, mostly waiting on
# the network, each build waiting for its own. The Go module cache is safe
# for concurrent go commands: a build that needs a module still downloading
# waits for it. The log is bin/prefetch.log.
PREFETCH_MODULES = tools tools/controlplane $(filter-out tools/controlplane/ tools/golangci-lint/,$(dir $(wildcard tools/*/go.mod)))
prefetch:
	@mkdir -p bin
	@(for m in $(PREFETCH_MODULES); do echo "$$m"; (cd $$m && $(GO) mod download) || echo "$$m: not downloaded ahead (its build downloads it)"; done) >bin/prefetch.log 2>&1 </dev/null &

# TESTFLAGS go to every go test of make test: -json, say, gives each test's
# time (docs/development.md).
test: prefetch lint build tools host-images node-bins bin/previous/controller bin/images/podreload-previous-$(HOST_ARCH).tar ## Run the linters, then unit and e2e tests with the race detector (e2e/node needs root).
	$(GO) test -race -count=1 -timeout 30m $(TESTFLAGS) $$($(GO) list ./... | grep -v /testenv/node | grep -v /e2e/node)
	@# Without -race: the packages it links are then those `make images` compiled.
	cd tools/images && $(GO) test -count=1 $(TESTFLAGS) ./...
	@# After the rest: the node's Prometheus runs in this machine's PID namespace,
	@# where e2e's signal tests must find the only prometheus process.
	$(GO) test -race -count=1 -p 1 -timeout 30m $(TESTFLAGS) ./internal/testenv/node/ ./e2e/node/

unit: tools bin/images/podreload-$(HOST_ARCH).tar ## Run the unit tests only.
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /e2e)

e2e: build tools ## Run the e2e tests against real Prometheus.
	$(GO) test -race -count=1 -v ./e2e/

fuzz: ## Fuzz the $(VAR) expansion for a minute.
	$(GO) test -run=NONE -fuzz=FuzzExpand -fuzztime=60s ./envsubst/

# STYLE.md: a file past 600 lines holds more than one concern. Tests,
# generated code and tools/ aside.
MAX_FILE_LINES := 600

lint: bin/golangci-lint ## gofmt, go vet and tidy checks, files of at most 600 lines, then golangci-lint with the house rules (.golangci.yml).
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	@long=$$(for f in $$(git ls-files '*.go' ':!:*_test.go' ':!:tools/'); do \
		grep -q '^// Code generated .* DO NOT EDIT\.$$' $$f && continue; \
		n=$$(wc -l < $$f); if [ $$n -gt $(MAX_FILE_LINES) ]; then echo "$$f: $$n lines"; fi; \
	done); test -z "$$long" || { echo "$$long"; echo "a file past $(MAX_FILE_LINES) lines holds more than one concern: split it (STYLE.md)"; exit 1; }
	@# Built as make build builds (static, -trimpath): the packages it
	@# compiles are then those of the binaries (a cold build of them after it
	@# took 4 s, not 3.6 minutes).
	CGO_ENABLED=0 $(GO) vet -trimpath ./...
	@# tools/ is vetted by golangci-lint's govet below: a go vet of it cost 4
	@# minutes of a cold run, compiling every tool's dependencies once more.
	$(GO) mod tidy -diff
	cd tools && $(GO) mod tidy -diff
	cd tools/alertmanager && $(GO) mod tidy -diff
	cd tools/alertmanager-v0.25 && $(GO) mod tidy -diff
	cd tools/prometheus-v2 && $(GO) mod tidy -diff
	cd tools/thanos && $(GO) mod tidy -diff
	cd tools/controller-gen && $(GO) mod tidy -diff
	cd tools/helm && $(GO) mod tidy -diff
	cd tools/controlplane && $(GO) mod tidy -diff
	cd tools/containerd && $(GO) mod tidy -diff
	cd tools/coredns && $(GO) mod tidy -diff
	cd tools/images && $(GO) vet ./... && $(GO) mod tidy -diff
	cd tools/golangci-lint && $(GO) mod tidy -diff
	# --allow-serial-runners: a second run (another worktree, an editor)
	# waits for the first instead of failing.
	$(BIN)/golangci-lint run --allow-serial-runners ./...
	cd tools && $(BIN)/golangci-lint run --allow-serial-runners ./...

bench: build tools bin/prometheus-config-reloader bin/memfloor ## Measure the reloaders, the controller and the pipeline; writes docs/benchmarks.md.
	cd tools && $(GO) run ./benchreload -bin $(BIN) -out $(CURDIR)/docs
	$(GO) test -run NONE -bench . -benchmem ./controller/...
	PODRELOAD_BENCH_DOCS=$(CURDIR)/docs/benchmarks.md $(GO) test -run NONE -bench Scale -benchtime 1x -timeout 30m ./cmd/controller/
	PODRELOAD_BENCH_DOCS=$(CURDIR)/docs/benchmarks.md $(GO) test -run NONE -bench Handoff -benchtime 1x -timeout 20m ./e2e/handoff/
	PODRELOAD_BENCH_DOCS=$(CURDIR)/docs/benchmarks.md $(GO) test -run NONE -bench Collector -benchtime 1x -timeout 20m ./collect/
	PODRELOAD_E2E_BIN=$(BIN) PODRELOAD_BENCH_DOCS=$(CURDIR)/docs/benchmarks.md $(GO) test -run NONE -bench 'Pipeline|APISource|AppliedStatus' -benchtime 1x ./e2e/
	$(MAKE) host-images node-bins
	PODRELOAD_BENCH_DOCS=$(CURDIR)/docs/benchmarks.md $(GO) test -run NONE -bench 'NodeRuleEdit|Takeover|AlertmanagerConfigEdit|DaemonSetAgentEdit' -benchtime 1x -timeout 90m ./e2e/node/

# The demo builds what it runs and nothing else, side by side (make -j3):
# kube-apiserver then etcd (they share packages), Prometheus, and the
# controller and config-reloader then the e2e test binary, compiled as they
# are (static, -trimpath), so it reuses their packages. The test runs these
# binaries (PODRELOAD_E2E_BIN), not a -race build of its own.
demo: ## Run the demo: a custom resource change through the controller to a real Prometheus, narrated.
	@$(MAKE) --no-print-directory -j3 demo-bins
	cd e2e && PODRELOAD_E2E_BIN=$(BIN) $(BIN)/demo.test -test.count=1 -test.run '^TestDemo$$' -test.v

demo-bins: demo-controlplane demo-prometheus bin/demo.test

bin/demo.test: $(SOURCES) $(wildcard e2e/*.go) | bin/controller bin/config-reloader
	CGO_ENABLED=0 $(GO) test -c -trimpath -vet=off -o $@ ./e2e/

# kube-apiserver alone, then etcd, and Prometheus without promtool, with the
# flags of the rules above, which build them with the other binaries of their
# module when `make tools` wants those too (then linking them once more).
demo-controlplane:
	@if [ ! bin/kube-apiserver -nt tools/controlplane/go.mod ] || [ ! bin/kube-apiserver -nt tools/controlplane/go.sum ]; then set -x; \
		$(KUBEBUILD) -o $(CURDIR)/bin/ k8s.io/kubernetes/cmd/kube-apiserver; fi
	@$(MAKE) --no-print-directory bin/etcd

demo-prometheus:
	@if [ ! bin/prometheus -nt tools/go.mod ] || [ ! bin/prometheus -nt tools/go.sum ]; then set -x; \
		$(PROMBUILD) -o $(CURDIR)/bin/ github.com/prometheus/prometheus/cmd/prometheus; fi

clean: ## Remove bin/.
	rm -rf bin
