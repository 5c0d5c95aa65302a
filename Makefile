# profilekit: build, generate and test.
#
# make test builds or installs everything the tests need on a fresh machine,
# cached under bin/: kube-apiserver, etcd and kube-controller-manager from
# source, OPA from source, Azurite from npm, the Argo CD CRDs from the Argo CD
# module, the PostgreSQL server package when it is missing, controller-gen and
# mockgen, Helm and the Prometheus Operator CRDs for the chart tests,
# Prometheus and promtool from Debian's package for the monitoring tests,
# Debian's chromium for the tenant page's browser test when it is missing, and
# golangci-lint; it checks that the generated files are current and that
# the code passes the linters, then runs every test with the race detector
# (two packages at a time) but the load tests, then the load tests alone,
# then the harness's sample and its mutation sample without the race
# detector.

SHELL := /usr/bin/env bash -o pipefail
export GOTOOLCHAIN ?= local

KUBE_VERSION  := 1.36.3
ETCD_VERSION  := 3.6.6
LOCALBIN      := $(CURDIR)/bin
ASSETS        := $(LOCALBIN)/k8s/$(KUBE_VERSION)-etcd$(ETCD_VERSION)
export KUBEBUILDER_ASSETS := $(ASSETS)

OPA_VERSION      := 1.22.2
AZURITE_VERSION  := 3.37.0
OPA              := $(ASSETS)/opa
AZURITE          := $(ASSETS)/azurite/node_modules/.bin/azurite-blob

CONTROLLER_GEN := $(LOCALBIN)/controller-gen
MOCKGEN        := $(LOCALBIN)/mockgen
# -p 2: the race step is bound by CPU (user and system time of a fresh run
# are 1.8 times its wall time on two cores), so more packages at a time do
# not end it sooner; at -p 4 they only starved each other past their
# tests' waits (blobcsi's hosts, the rollout and monitoring tests of
# examples/host, the admission webhook's answers). -timeout 30m: several
# times what the longest package takes on a quiet machine, for a slower or
# busier one; go test's default of 10 minutes is not enough there.
GO_TEST_FLAGS  ?= -race -count=1 -p 2 -timeout 30m
# The harness's -short sample runs without the race detector, as make
# harness and make mutation do: every package's own tests, the plugins'
# among them, run with it in the step before.
HARNESS_SAMPLE_FLAGS ?= -count=1 -p 4 -short -timeout 30m
# GOGC for the test runs: the go command, the compiler, the test binaries
# and the control planes, databases and OPA servers they start inherit it.
# The tests are bound by CPU on a two-core machine, and a fifth of their
# CPU is garbage collection at Go's default of 100 (plugins/apply's tests:
# user 17.2 s at 100, 13.7 s at 300), while memory is plentiful. make bench
# does not use it: it measures the host at its shipped GOGC.
TEST_GOGC ?= 300
PKGS           ?= ./...
# The harness's tests (plugins/plugintest) and the packages that hold them:
# make test runs their -short sample, make harness every plan.
HARNESS_TESTS  := EveryPerturbation
# The load tests drive the API server as hard as they can and judge how a
# balancer keeps up: beside three other packages on two cores they measure
# the neighbours, and the neighbours' waits time out under them. make test
# runs them after every other package's tests, one package at a time.
LOAD_TESTS     := ^(TestLoadNeverOverspends|TestLoadBrokenOrderOverspends|TestBurstLoad)$$
LOAD_PKGS      := ./plugins/budgets
# What the harness's packages need on disk: templates' control plane
# serves the Prometheus Operator's CRDs, apps' the Argo CD ones.
HARNESS_ASSETS := envtest-assets test-servers argocd-crds prometheus-crds postgres-server
HARNESS_PKGS    = $(sort $(dir $(shell grep -rl --include='*_test.go' 'func Test[A-Za-z]*$(HARNESS_TESTS)' plugins gitea examples)))

.PHONY: all
all: build

.PHONY: build
build: ## Compile every package.
	go build ./...

.PHONY: test
test: envtest-assets test-servers argocd-crds prometheus-crds prometheus helm kustomize postgres-server chromium verify-generated verify-mocks apicheck lint ## Build the test assets, check generated files, the stable API and lint, run every test with the race detector.
	GOGC=$(TEST_GOGC) go vet ./...
	@start=$$(date +%s); set -x; GOGC=$(TEST_GOGC) go test $(GO_TEST_FLAGS) -skip '$(HARNESS_TESTS)|$(LOAD_TESTS)' $(PKGS); \
	status=$$?; set +x; echo "every package's tests (-race): $$(( $$(date +%s) - start )) s"; exit $$status
	@start=$$(date +%s); set -x; GOGC=$(TEST_GOGC) go test $(GO_TEST_FLAGS) -p 1 -run '$(LOAD_TESTS)' $(LOAD_PKGS); \
	status=$$?; set +x; echo "load tests, alone (-race): $$(( $$(date +%s) - start )) s"; exit $$status
	@start=$$(date +%s); set -x; GOGC=$(TEST_GOGC) go test $(HARNESS_SAMPLE_FLAGS) -run '$(HARNESS_TESTS)' $(addprefix ./,$(HARNESS_PKGS)); \
	status=$$?; set +x; echo "harness (-short sample): $$(( $$(date +%s) - start )) s"; exit $$status
	@$(MAKE) --no-print-directory mutation-sample
	cd hack/image && GOGC=$(TEST_GOGC) go vet ./... && GOGC=$(TEST_GOGC) go test $(GO_TEST_FLAGS) ./...

.PHONY: harness
harness: $(HARNESS_ASSETS) ## Run every plan of the crash, stale, unobserved and outside-failure harness (make test runs a -short sample) and print the plans per plugin and pattern; the whole output goes to bin/harness.log.
	@go test -count=1 -timeout 60m -run '$(HARNESS_TESTS)' -v $(addprefix ./,$(HARNESS_PKGS)) > $(LOCALBIN)/harness.log 2>&1; status=$$?; \
	grep -E '^(ok|FAIL|--- FAIL)|: [0-9]+ .*plans, [0-9]+ failed|rerun:' $(LOCALBIN)/harness.log; exit $$status

# The mutation and breakage targets.
include hack/make/mutation.mk

.PHONY: envtest-assets
envtest-assets: $(ASSETS)/kube-apiserver $(ASSETS)/etcd $(ASSETS)/kube-controller-manager ## Build kube-apiserver, etcd and kube-controller-manager for envtest into bin/.

$(ASSETS)/kube-apiserver:
	@mkdir -p $(ASSETS)
	@echo "building kube-apiserver v$(KUBE_VERSION) (a few minutes on a fresh machine)"
	cd hack/kube-apiserver && CGO_ENABLED=0 go build -trimpath \
		-ldflags "-X k8s.io/component-base/version.gitVersion=v$(KUBE_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36" \
		-o $@.tmp k8s.io/kubernetes/cmd/kube-apiserver && mv $@.tmp $@

# kube-controller-manager comes from the same wrapper module as kube-apiserver,
# so most of its build is already in the cache.
$(ASSETS)/kube-controller-manager:
	@mkdir -p $(ASSETS)
	@echo "building kube-controller-manager v$(KUBE_VERSION)"
	cd hack/kube-apiserver && CGO_ENABLED=0 go build -trimpath \
		-ldflags "-X k8s.io/component-base/version.gitVersion=v$(KUBE_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36" \
		-o $@.tmp k8s.io/kubernetes/cmd/kube-controller-manager && mv $@.tmp $@

.PHONY: kube-controller-manager
kube-controller-manager: $(ASSETS)/kube-controller-manager ## Build kube-controller-manager for tests into bin/.

$(ASSETS)/etcd:
	@mkdir -p $(ASSETS)
	@echo "building etcd v$(ETCD_VERSION)"
	cd hack/etcd && CGO_ENABLED=0 go build -trimpath -o $@.tmp go.etcd.io/etcd/server/v3 && mv $@.tmp $@

ARGOCD_VERSION := 2.14.21
ARGOCD_CRDS    := $(ASSETS)/argocd-v$(ARGOCD_VERSION)

.PHONY: argocd-crds
argocd-crds: $(ARGOCD_CRDS)/application-crd.yaml ## Copy the Argo CD CRDs from the Argo CD Go module into bin/ (YAML only, no Go packages).

$(ARGOCD_CRDS)/application-crd.yaml:
	@mkdir -p $(ARGOCD_CRDS)
	dir=$$(go mod download -json github.com/argoproj/argo-cd/v2@v$(ARGOCD_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
	test -n "$$dir" && \
	cp $$dir/manifests/crds/application-crd.yaml $$dir/manifests/crds/appproject-crd.yaml $$dir/manifests/crds/applicationset-crd.yaml $(ARGOCD_CRDS)/ && \
	chmod u+w $(ARGOCD_CRDS)/*.yaml

PROMETHEUS_OPERATOR_VERSION := 0.85.0
PROMETHEUS_CRDS := $(ASSETS)/prometheus-operator-v$(PROMETHEUS_OPERATOR_VERSION)

.PHONY: prometheus-crds
prometheus-crds: $(PROMETHEUS_CRDS)/monitoring.coreos.com_servicemonitors.yaml ## Copy the ServiceMonitor and PrometheusRule CRDs from the Prometheus Operator Go module into bin/ (YAML only).

$(PROMETHEUS_CRDS)/monitoring.coreos.com_servicemonitors.yaml:
	@mkdir -p $(PROMETHEUS_CRDS)
	dir=$$(go mod download -json github.com/prometheus-operator/prometheus-operator@v$(PROMETHEUS_OPERATOR_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
	test -n "$$dir" && \
	cp $$dir/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml $$dir/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml $(PROMETHEUS_CRDS)/ && \
	chmod u+w $(PROMETHEUS_CRDS)/*.yaml

# Prometheus and promtool for the monitoring tests (alert rules, a real
# scrape of the host), from Debian's prometheus package: unpacked, not
# installed, so no service starts and no root is needed once apt's package
# lists are current (apt-get update runs, with sudo unless root, when the
# package is not found).
PROMETHEUS_DIR := $(ASSETS)/prometheus

.PHONY: prometheus
prometheus: $(PROMETHEUS_DIR)/promtool ## Unpack prometheus and promtool from Debian's prometheus package next to kube-apiserver for the monitoring tests.

$(PROMETHEUS_DIR)/promtool:
	@mkdir -p $(PROMETHEUS_DIR)
	@echo "unpacking Debian's prometheus package"
	tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && cd $$tmp && \
	{ apt-get download prometheus 2>/dev/null || { \
		$$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update && apt-get download prometheus; }; } && \
	dpkg-deb -x prometheus_*.deb root && \
	dpkg-deb -f prometheus_*.deb Version > $(PROMETHEUS_DIR)/VERSION && \
	cp root/usr/bin/prometheus $(PROMETHEUS_DIR)/prometheus && \
	cp root/usr/bin/promtool $@.tmp && mv $@.tmp $@
	$@ --version

# Helm for the chart tests (examples/deploy/helm), built from the Go module
# proxy with the version stamps of a Helm release (Kubernetes 1.37 follows
# its client-go v0.37); bin/helm points at the versioned binary.
HELM_VERSION := 3.22.0
HELM         := $(LOCALBIN)/helm-v$(HELM_VERSION)
HELM_LDFLAGS := -X helm.sh/helm/v3/internal/version.version=v$(HELM_VERSION) \
	$(foreach p,pkg/chartutil pkg/lint/rules,-X helm.sh/helm/v3/$(p).k8sVersionMajor=1 -X helm.sh/helm/v3/$(p).k8sVersionMinor=37)

.PHONY: helm
helm: $(HELM) ## Build Helm into bin/helm for the chart tests.
	@ln -sf $(notdir $(HELM)) $(LOCALBIN)/helm

$(HELM):
	@mkdir -p $(LOCALBIN)
	@echo "building helm v$(HELM_VERSION) (a few minutes on a fresh machine)"
	tmp=$$(mktemp -d) && GOBIN=$$tmp CGO_ENABLED=0 go install -trimpath \
		-ldflags "$(HELM_LDFLAGS)" \
		helm.sh/helm/v3/cmd/helm@v$(HELM_VERSION) && mv $$tmp/helm $@ && rmdir $$tmp

# golangci-lint for make lint (.golangci.yml), which make test runs.
GOLANGCI_LINT_VERSION := 2.15.0
GOLANGCI_LINT         := $(LOCALBIN)/golangci-lint-v$(GOLANGCI_LINT_VERSION)

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint with .golangci.yml over the module, hack/image and hack/apicheck.
	$(GOLANGCI_LINT) run ./...
	cd hack/image && $(GOLANGCI_LINT) run -c ../../.golangci.yml ./...
	cd hack/apicheck && $(GOLANGCI_LINT) run -c ../../.golangci.yml ./...

$(GOLANGCI_LINT):
	@mkdir -p $(LOCALBIN)
	@echo "building golangci-lint v$(GOLANGCI_LINT_VERSION) (a few minutes on a fresh machine)"
	tmp=$$(mktemp -d) && GOBIN=$$tmp CGO_ENABLED=0 go install -trimpath \
		github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v$(GOLANGCI_LINT_VERSION) && mv $$tmp/golangci-lint $@ && rmdir $$tmp

# One plugin's loop: P is a plugin's kind (quotas) or a package folder
# (plugins/quotas, gitea).
P ?=

.PHONY: plugin
# The one-plugin loop runs without the race detector, for speed; make test
# runs every package with it.
PLUGIN_TEST_FLAGS ?= -count=1 -short

plugin: $(HARNESS_ASSETS) $(GOLANGCI_LINT) ## One plugin's loop, P=<kind> (or a folder): its package's tests and its harness's -short sample (PLUGIN_TEST_FLAGS), and lint of the package; prints its time.
	@[ -n "$(P)" ] || { echo "make plugin P=<kind>, e.g. P=quotas"; exit 2; }
	@start=$$(date +%s); dir=plugins/$(P); [ -d "$$dir" ] || dir=$(P); \
	[ -d "$$dir" ] || { echo "no folder plugins/$(P) or $(P)"; exit 2; }; \
	GOGC=$(TEST_GOGC) go test $(PLUGIN_TEST_FLAGS) ./$$dir/... && $(GOLANGCI_LINT) run ./$$dir/...; \
	status=$$?; echo "plugin loop $$dir: $$(( $$(date +%s) - start )) s"; exit $$status

# kustomize for the tests that build the kustomize base and overlays
# (examples/deploy), so that they need no kubectl on the machine.
KUSTOMIZE_VERSION := 5.7.1
KUSTOMIZE         := $(LOCALBIN)/kustomize-v$(KUSTOMIZE_VERSION)

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Build kustomize into bin/kustomize for the deploy tests.
	@ln -sf $(notdir $(KUSTOMIZE)) $(LOCALBIN)/kustomize

$(KUSTOMIZE):
	@mkdir -p $(LOCALBIN)
	@echo "building kustomize v$(KUSTOMIZE_VERSION)"
	tmp=$$(mktemp -d) && GOBIN=$$tmp CGO_ENABLED=0 go install -trimpath \
		sigs.k8s.io/kustomize/kustomize/v5@v$(KUSTOMIZE_VERSION) && mv $$tmp/kustomize $@ && rmdir $$tmp

PG_VERSION := 15

.PHONY: postgres-server
postgres-server: ## Install the PostgreSQL server package the tests start privately, when initdb is missing.
	@if [ -x /usr/lib/postgresql/$(PG_VERSION)/bin/initdb ] || command -v initdb >/dev/null; then \
		echo "PostgreSQL server present"; \
	else \
		echo "installing postgresql-$(PG_VERSION)"; \
		$$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update && \
		$$( [ "$$(id -u)" = 0 ] || echo sudo ) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-$(PG_VERSION); \
	fi

.PHONY: chromium
chromium: ## Install Debian's chromium, which the tenant page's browser test drives headless, when it is missing.
	@if command -v chromium >/dev/null; then \
		echo "chromium present"; \
	else \
		echo "installing chromium"; \
		$$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update && \
		$$( [ "$$(id -u)" = 0 ] || echo sudo ) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; \
	fi

.PHONY: test-servers
test-servers: $(OPA) $(AZURITE) ## Build OPA and install Azurite next to kube-apiserver for the storage tests.

STORAGE_PROFILES ?= 1000

.PHONY: bench-storage
bench-storage: envtest-assets test-servers ## Converge STORAGE_PROFILES Profiles with blobcsi (3 instances, 50 shared buckets) against Azurite and OPA.
	PROFILEKIT_SCALE_PROFILES=$(STORAGE_PROFILES) go test -count=1 -run '^TestScale$$' -v -timeout 60m ./plugins/blobcsi/

$(OPA):
	@mkdir -p $(ASSETS)
	@echo "building opa v$(OPA_VERSION) (a few minutes on a fresh machine)"
	GOBIN=$(ASSETS) CGO_ENABLED=0 go install -trimpath github.com/open-policy-agent/opa@v$(OPA_VERSION)

$(AZURITE):
	@mkdir -p $(ASSETS)/azurite
	@echo "installing azurite $(AZURITE_VERSION)"
	npm install --prefix $(ASSETS)/azurite --no-audit --no-fund --loglevel=error azurite@$(AZURITE_VERSION)

$(CONTROLLER_GEN): hack/tools/go.mod
	@mkdir -p $(LOCALBIN)
	cd hack/tools && go build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy functions and the Profile CRD.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=api/kubeflow/crd

.PHONY: verify-generated
verify-generated: $(CONTROLLER_GEN) ## Fail when generated files differ from what make generate writes.
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=$$tmp && \
	diff -u api/kubeflow/crd/kubeflow.org_profiles.yaml $$tmp/kubeflow.org_profiles.yaml && \
	for v in v1 v1beta1; do \
		cp api/kubeflow/$$v/zz_generated.deepcopy.go $$tmp/$$v.go; \
	done && \
	$(CONTROLLER_GEN) object paths=./api/... && \
	for v in v1 v1beta1; do \
		if ! diff -u $$tmp/$$v.go api/kubeflow/$$v/zz_generated.deepcopy.go; then \
			cp $$tmp/$$v.go api/kubeflow/$$v/zz_generated.deepcopy.go; \
			echo "api/kubeflow/$$v deepcopy is stale: run make generate"; exit 1; \
		fi; \
	done
	@echo "generated files are current"

.PHONY: fmt
fmt: ## Format the code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "%-18s %s\n", $$1, $$2}'

.PHONY: demo
demo: envtest-assets ## Run every plugin on a local control plane and narrate what they do.
	go run ./examples/host demo

# local runs the built binary rather than go run, which exits 1 after a
# Ctrl-C however its program ends, and make would report that as an error.
.PHONY: local
local: envtest-assets build-host ## Keep a local cluster with the host, the sample Profiles and the tenant page running until Ctrl-C (ARGS="--as alice@example.org").
	$(LOCALBIN)/profilekit local $(ARGS)

HOST_VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
HOST_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)

.PHONY: build-host
build-host: ## Build the profilekit host binary into bin/profilekit.
	@mkdir -p $(LOCALBIN)
	go build -trimpath -ldflags "-X main.version=$(HOST_VERSION) -X main.revision=$(HOST_REVISION)" -o $(LOCALBIN)/profilekit ./examples/host

# The host's image, built without a Docker daemon by hack/image (its own
# module); the Dockerfile builds the same image with Docker.
PLATFORMS ?= linux/$(shell go env GOARCH)
IMAGE     ?=

.PHONY: image
image: ## Build the host's OCI image into bin/image (PLATFORMS=linux/amd64,linux/arm64) and run its profilekit version.
	cd hack/image && go run . build --src $(CURDIR) --out $(LOCALBIN)/image --platforms=$(PLATFORMS) \
		--version=$(HOST_VERSION) --revision=$(HOST_REVISION)

.PHONY: push
push: ## Push the image that make image built to IMAGE=<registry>/<repository>:<tag> with the credentials of docker login.
	@test -n "$(IMAGE)" || { echo "make push needs IMAGE=<registry>/<repository>:<tag>"; exit 1; }
	@test -f $(LOCALBIN)/image/index.json || { echo "no image in bin/image: run make image first"; exit 1; }
	cd hack/image && go run . push $(LOCALBIN)/image $(IMAGE)

BENCH_FLAGS ?=

.PHONY: bench
bench: envtest-assets ## Measure the host on a local control plane (BENCH_FLAGS="--profiles 5000"); see bench/README.md.
	go run ./examples/host/bench $(BENCH_FLAGS)

SCALE_PROFILES ?= 1000 10000
.PHONY: bench-scale
bench-scale: envtest-assets ## Run the bench unthrottled at each of SCALE_PROFILES Profiles (default 1000 10000, about 45 minutes) and print the runs side by side.
	@set -e; results=""; \
	for n in $(SCALE_PROFILES); do \
		go run ./examples/host/bench --profiles $$n --regimes unthrottled --timeout 60m $(BENCH_FLAGS) | tee bench-scale-$$n.log; \
		results="$$results $$(sed -n 's/^result saved to //p' bench-scale-$$n.log)"; \
		rm -f bench-scale-$$n.log; \
	done; \
	go run ./examples/host/bench scale $$results

# apicheck compares the exported API of the stable packages (those whose
# doc.go has a Stability section; only the names it calls stable count) with
# the baseline in hack/apicheck/baseline, through golang.org/x/exp/apidiff
# pinned by the hack/apicheck module. See CONTRIBUTING.md, "Stability".
APICHECK          := $(LOCALBIN)/apicheck
APICHECK_BASELINE := hack/apicheck/baseline

$(APICHECK): hack/apicheck/go.mod hack/apicheck/go.sum hack/apicheck/main.go
	@mkdir -p $(LOCALBIN)
	cd hack/apicheck && go build -o $@ .

.PHONY: apicheck
apicheck: $(APICHECK) ## Fail on an incompatible change to a stable name against the committed API baseline.
	$(APICHECK) -baseline $(APICHECK_BASELINE)

.PHONY: apibaseline
apibaseline: $(APICHECK) ## Rewrite the API baseline from the code (a break also needs a CHANGELOG "Breaking changes" line).
	$(APICHECK) -baseline $(APICHECK_BASELINE) -w

$(MOCKGEN): hack/tools/go.mod
	@mkdir -p $(LOCALBIN)
	cd hack/tools && go build -o $@ go.uber.org/mock/mockgen

# Packages whose go:generate lines run mockgen (doubles of cloud IAM APIs).
MOCK_PKGS := ./plugins/irsa ./plugins/workloadidentity ./plugins/azureidentity

.PHONY: generate-mocks
generate-mocks: $(MOCKGEN) ## Regenerate the go.uber.org/mock doubles of the cloud IAM clients.
	PATH=$(LOCALBIN):$$PATH go generate $(MOCK_PKGS)

.PHONY: verify-mocks
verify-mocks: $(MOCKGEN) ## Fail when a generated mock differs from what make generate-mocks writes.
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	files=$$(git ls-files '*/iammock/*.go') && \
	for f in $$files; do mkdir -p $$tmp/$$(dirname $$f) && cp $$f $$tmp/$$f; done && \
	PATH=$(LOCALBIN):$$PATH go generate $(MOCK_PKGS) && \
	for f in $$files; do \
		if ! diff -u $$tmp/$$f $$f; then cp $$tmp/$$f $$f; echo "$$f is stale: run make generate-mocks"; exit 1; fi; \
	done
	@echo "generated mocks are current"
