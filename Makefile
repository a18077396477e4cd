# bindgate Makefile. `make help` lists the targets.

LOCALBIN ?= $(CURDIR)/bin
export PATH := $(LOCALBIN):$(PATH)
# envtest finds kube-apiserver, etcd and kubectl here.
export KUBEBUILDER_ASSETS := $(LOCALBIN)

IMG ?= bindgate:dev
GO ?= go
GOTEST_FLAGS ?= -race -count=1
TEST_TIMEOUT ?= 30m

CONTROLLER_GEN := $(LOCALBIN)/controller-gen
GOLANGCI_LINT  := $(LOCALBIN)/golangci-lint
KUBE_APISERVER := $(LOCALBIN)/kube-apiserver
KUBECTL        := $(LOCALBIN)/kubectl
KUBE_SCHEDULER := $(LOCALBIN)/kube-scheduler
ETCD           := $(LOCALBIN)/etcd
KWOK           := $(LOCALBIN)/kwok
HELM           := $(LOCALBIN)/helm

# The Kubernetes binaries are stamped with the pinned release, as release
# builds are (a plain `go build` reports v0.0.0-master): clients such as
# bindgate read the API server's version from /version.
KUBE_VERSION := $(shell awk '{ for (i = 1; i < NF; i++) if ($$i == "k8s.io/kubernetes") { print $$(i+1); exit } }' hack/tools/kubernetes/go.mod)
KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=$(word 2,$(subst ., ,$(subst v,v ,$(KUBE_VERSION)))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) \
	-X k8s.io/component-base/version.gitTreeState=clean

.PHONY: all
all: build

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD, RBAC and webhook manifests from markers (and copy the CRD into the Helm chart).
	$(CONTROLLER_GEN) rbac:roleName=bindgate-manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases
	cp config/crd/bases/*.yaml config/helm/bindgate/crds/

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy methods and the schemas permit expressions are type-checked against.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."
	@kube=$$(cd hack/tools/kubernetes && $(GO) mod download -json k8s.io/kubernetes | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	test -n "$$kube" || { echo "cannot locate the k8s.io/kubernetes module"; exit 1; }; \
	echo "$(GO) run ./hack/celschema --core $$kube/api/openapi-spec/v3/api__v1_openapi.json ..."; \
	$(GO) run ./hack/celschema --core $$kube/api/openapi-spec/v3/api__v1_openapi.json \
		--crd config/crd/bases/scheduling.bindgate.dev_bindingpolicies.yaml --out internal/permit/schemas.json

.PHONY: verify
verify: manifests generate ## Fail when generated files are stale.
	@if [ -n "$$(git status --porcelain -- config api internal/permit/schemas.json)" ]; then \
		echo "generated files are stale; run 'make manifests generate' and commit:"; \
		git status --porcelain -- config api internal/permit/schemas.json; git diff --stat -- config api internal/permit/schemas.json; exit 1; \
	fi

.PHONY: fmt
fmt: ## Run gofmt (fails on unformatted files).
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...

.PHONY: test
test: fmt vet verify lint control-plane build $(KWOK) $(KUBE_SCHEDULER) ## The one test command: checks, unit and envtest suites (kube-scheduler is the differential test's reference).
	$(GO) test $(GOTEST_FLAGS) -timeout $(TEST_TIMEOUT) ./...

.PHONY: test-e2e
test-e2e: control-plane build $(KWOK) ## Install tests and the playground run: helm lint/template/install/upgrade/uninstall, kustomize builds.
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./test/e2e/...

FAULTS_SEED ?=
.PHONY: test-faults
test-faults: control-plane ## Fault scenarios in full (4x the pods of their short versions in make test); FAULTS_SEED=N replays one seed.
	BINDGATE_FAULTS=full BINDGATE_FAULTS_SEED=$(FAULTS_SEED) $(GO) test -count=1 -timeout 60m -v ./test/faults/

SOAK_DURATION ?= 30m
SOAK_SEED ?= 0
SOAK_OUT ?= $(CURDIR)/soak-out
.PHONY: soak
soak: control-plane ## Soak run (SOAK_DURATION=30m, SOAK_SEED=N, SOAK_OUT=dir): pods, gangs, approvals, flaky webhooks, node churn, low-rate API faults; prints a summary, writes summary.txt, samples.csv and soak.png into SOAK_OUT.
	$(GO) run ./test/soak --duration=$(SOAK_DURATION) --seed=$(SOAK_SEED) --out=$(SOAK_OUT)

.PHONY: test-unit
test-unit: ## Unit tests only: no binary from bin/ is needed (packages that need a control plane skip under -short, saying so).
	$(GO) test -count=1 -short ./...

##@ Build

.PHONY: build
build: ## Build the operator binary into bin/.
	$(GO) build -o $(LOCALBIN)/bindgate .

# Where install-plugin puts kubectl-bindgate: a directory on PATH (as `go
# install` uses GOBIN, else GOPATH/bin).
PLUGIN_DIR ?= $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)
VERSION ?= v0.1.0
KREW_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.PHONY: install-plugin
install-plugin: build ## Install bin/bindgate as the kubectl plugin kubectl-bindgate in $(PLUGIN_DIR): `kubectl bindgate explain pod NAME -n NS`.
	@mkdir -p $(PLUGIN_DIR)
	install -m 0755 $(LOCALBIN)/bindgate $(PLUGIN_DIR)/kubectl-bindgate
	@case ":$$PATH:" in *":$(PLUGIN_DIR):"*) ;; *) echo ">> $(PLUGIN_DIR) is not on PATH: add it, or run make install-plugin PLUGIN_DIR=<a directory on PATH>";; esac

.PHONY: krew-manifest
krew-manifest: ## Build the plugin archives for $(KREW_PLATFORMS) and render config/krew/bindgate.yaml with their sha256 into dist/krew/ (VERSION=$(VERSION)).
	@mkdir -p dist/krew
	@cp config/krew/bindgate.yaml dist/krew/bindgate.yaml
	@for p in $(KREW_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; dir=dist/krew/kubectl-bindgate_$${os}_$${arch}; mkdir -p $$dir; \
		echo ">> building $$dir"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -o $$dir/kubectl-bindgate . || exit 1; \
		cp LICENSE $$dir/ 2>/dev/null || true; \
		tar -C $$dir -czf $$dir.tar.gz . || exit 1; \
		sum=$$(sha256sum $$dir.tar.gz | cut -d' ' -f1); \
		sed -i -e "s|SHA256_$${os}_$${arch}|$$sum|" dist/krew/bindgate.yaml; \
	done
	@sed -i -e "s|v0.1.0|$(VERSION)|g" dist/krew/bindgate.yaml
	@echo ">> wrote dist/krew/bindgate.yaml and its archives; upload the archives to the $(VERSION) release"

.PHONY: docker-build
docker-build: ## Build the operator image $(IMG) from the Dockerfile (needs a Docker engine).
	docker build -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image $(IMG).
	docker push $(IMG)

.PHONY: build-installer
build-installer: manifests $(KUBECTL) ## Render config/default, with image $(IMG), into dist/install.yaml: one file to kubectl apply.
	@mkdir -p dist
	$(KUBECTL) kustomize config/default | sed -e 's|image: ghcr.io/bindgate/bindgate:0.1.0|image: $(IMG)|' > dist/install.yaml
	@echo ">> wrote dist/install.yaml (image $(IMG))"

.PHONY: run
run: manifests ## Run the operator against the current kubeconfig.
	$(GO) run . --leader-elect=false

##@ Tools (each built from a pinned module under hack/tools, only when missing)

.PHONY: control-plane
control-plane: $(KUBE_APISERVER) $(KUBECTL) $(ETCD) $(HELM) ## Build kube-apiserver, kubectl, etcd (envtest) and helm (test/e2e).

$(LOCALBIN):
	@mkdir -p $(LOCALBIN)

$(KUBE_APISERVER): | $(LOCALBIN)
	@echo ">> building kube-apiserver (k8s.io/kubernetes, pinned in hack/tools/kubernetes; cold build takes several minutes)"
	cd hack/tools/kubernetes && $(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(LOCALBIN)/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver

$(KUBECTL): | $(LOCALBIN)
	@echo ">> building kubectl (k8s.io/kubernetes, pinned in hack/tools/kubernetes)"
	cd hack/tools/kubernetes && $(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(LOCALBIN)/kubectl k8s.io/kubernetes/cmd/kubectl

$(KUBE_SCHEDULER): | $(LOCALBIN)
	@echo ">> building kube-scheduler (k8s.io/kubernetes, pinned in hack/tools/kubernetes)"
	cd hack/tools/kubernetes && $(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(LOCALBIN)/kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler

$(ETCD): | $(LOCALBIN)
	@echo ">> building etcd (go.etcd.io/etcd/server/v3, pinned in hack/tools/etcd)"
	cd hack/tools/etcd && $(GO) build -o $(LOCALBIN)/etcd go.etcd.io/etcd/server/v3

$(CONTROLLER_GEN): | $(LOCALBIN)
	@echo ">> building controller-gen (pinned in hack/tools/controller-gen)"
	cd hack/tools/controller-gen && $(GO) build -o $(LOCALBIN)/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen

$(GOLANGCI_LINT): | $(LOCALBIN)
	@echo ">> building golangci-lint (pinned in hack/tools/golangci-lint)"
	cd hack/tools/golangci-lint && $(GO) build -o $(LOCALBIN)/golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint

$(KWOK): | $(LOCALBIN)
	@echo ">> building kwok (pinned in hack/tools/kwok)"
	cd hack/tools/kwok && $(GO) build -o $(LOCALBIN)/kwok sigs.k8s.io/kwok/cmd/kwok

$(HELM): | $(LOCALBIN)
	@echo ">> building helm (pinned in hack/tools/helm)"
	cd hack/tools/helm && $(GO) build -o $(LOCALBIN)/helm helm.sh/helm/v3/cmd/helm

.PHONY: clean
clean: ## Remove built binaries.
	rm -rf $(LOCALBIN)

##@ Benchmarks

.PHONY: bench
bench: build control-plane $(KUBE_SCHEDULER) ## Benchmark bindgate against kube-scheduler and the raw bind ceiling (writes docs/benchmarks.md).
	$(GO) run ./test/bench $(BENCH_ARGS)

##@ Playground

NODES ?= 20
PODS ?= 10

.PHONY: playground
playground: build control-plane $(KWOK) ## Run bindgate on a local control plane with NODES kwok nodes and a guided demo (PLAYGROUND_ARGS=--headless to run without a terminal).
	$(GO) build -o $(LOCALBIN)/playground ./test/playground
	exec $(LOCALBIN)/playground --nodes=$(NODES) --pods=$(PODS) $(PLAYGROUND_ARGS)
