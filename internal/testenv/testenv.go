/*
Copyright 2026 The bindgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package testenv starts a real kube-apiserver and etcd (built from pinned
// modules into bin/ by the Makefile) with bindgate's CRDs installed, for
// envtest suites. It never skips a full run: missing binaries are an error
// that says how to build them. Under -short (make test-unit) Main skips the
// whole package with a message instead.
package testenv

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	runtimeschema "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// Env is a running control plane.
type Env struct {
	Config    *rest.Config
	Client    client.Client
	Clientset kubernetes.Interface
	Scheme    *runtimeschema.Scheme
	// AssetsDir holds kube-apiserver, etcd and kubectl.
	AssetsDir string
	// Kubeconfig is a kubeconfig file for the admin user (for kubectl).
	Kubeconfig string
	// AdmissionHost, AdmissionPort and AdmissionCertDir are where an admission webhook server
	// must listen, and the serving certificate it must use, for the webhook
	// configurations installed by WithAdmission (empty without it).
	AdmissionHost    string
	AdmissionPort    int
	AdmissionCertDir string

	env *envtest.Environment
}

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// AssetsDir is KUBEBUILDER_ASSETS, or the repository's bin/ when unset.
func AssetsDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "bin")
}

// Scheme returns a scheme with the core and bindgate types.
func Scheme() *runtimeschema.Scheme {
	s := runtimeschema.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := bindgatev1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// Start starts etcd and kube-apiserver and installs the CRDs; options add
// more (see WithAdmission).
func Start(opts ...Option) (*Env, error) {
	assets := AssetsDir()
	for _, bin := range []string{"kube-apiserver", "etcd", "kubectl"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("control-plane binary %s is missing in %s: run 'make control-plane' (make test does): %w", bin, assets, err)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	for _, opt := range opts {
		opt(env)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	e := &Env{Config: cfg, Scheme: Scheme(), AssetsDir: assets, env: env}
	if wh := env.WebhookInstallOptions; len(wh.Paths) > 0 {
		e.AdmissionHost, e.AdmissionPort, e.AdmissionCertDir = wh.LocalServingHost, wh.LocalServingPort, wh.LocalServingCertDir
	}
	if e.Client, err = client.New(cfg, client.Options{Scheme: e.Scheme}); err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	if e.Clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating a clientset: %w", err)
	}
	if e.Kubeconfig, err = writeKubeconfig(env); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return e, nil
}

// EtcdURL is the etcd's client URL (its /metrics is there too).
func (e *Env) EtcdURL() string {
	if u := e.env.ControlPlane.Etcd.URL; u != nil {
		return u.String()
	}
	return ""
}

// Stop stops the control plane.
func (e *Env) Stop() error {
	if e.Kubeconfig != "" {
		_ = os.RemoveAll(filepath.Dir(e.Kubeconfig))
	}
	dir, owned := e.restartableDir()
	err := e.env.Stop()
	if owned == nil {
		_ = os.RemoveAll(dir)
	}
	return err
}

// Main is a package's TestMain body: it starts a control plane into *env,
// runs the tests, stops the control plane and exits with the tests' code.
// A control plane that does not start fails the package (never a skip).
// Under -short (make test-unit) the package is skipped, saying so: it
// needs kube-apiserver and etcd from bin/.
func Main(m interface{ Run() int }, env **Env, opts ...Option) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("SKIP: this package's tests run against kube-apiserver and etcd (bin/, built by make control-plane); they run without -short (make test)")
		os.Exit(0)
	}
	e, err := Start(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
	}
	os.Exit(code)
}

func writeKubeconfig(env *envtest.Environment) (string, error) {
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "bindgate-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding an admin user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("rendering a kubeconfig: %w", err)
	}
	dir, err := os.MkdirTemp("", "bindgate-kubeconfig-")
	if err != nil {
		return "", fmt.Errorf("creating a kubeconfig dir: %w", err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return path, nil
}
