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

package testenv

import (
	"context"
	"path/filepath"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Option changes the envtest environment before it starts.
type Option func(*envtest.Environment)

// WithAdmission installs the admission webhook configurations found in paths (files or
// directories, relative to the repository root when not absolute), rewritten
// by envtest to call a local server with a generated serving certificate:
// serve them at Env.AdmissionHost:Env.AdmissionPort with the certificate in
// Env.AdmissionCertDir.
func WithAdmission(paths ...string) Option {
	return func(env *envtest.Environment) {
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				p = filepath.Join(RepoRoot(), p)
			}
			env.WebhookInstallOptions.Paths = append(env.WebhookInstallOptions.Paths, p)
		}
	}
}

// DefaultAdmissionManifests is the generated admission webhook configuration.
var DefaultAdmissionManifests = filepath.Join("config", "webhook", "manifests.yaml")

// ServeAdmission runs, until the test ends, a manager whose admission webhook server
// serves the handlers that setup registers, where the API server (started
// WithAdmission) calls them.
func (e *Env) ServeAdmission(t testing.TB, setup func(ctrl.Manager) error) {
	t.Helper()
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: e.AdmissionHost, Port: e.AdmissionPort, CertDir: e.AdmissionCertDir,
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("webhook manager: %v", err)
		}
	})
}

// WithAPIServerArgs sets kube-apiserver flags (name, value pairs), such as
// feature-gates and runtime-config.
func WithAPIServerArgs(nameValues ...string) Option {
	return func(env *envtest.Environment) {
		args := env.ControlPlane.GetAPIServer().Configure()
		for i := 0; i+1 < len(nameValues); i += 2 {
			args.Append(nameValues[i], nameValues[i+1])
		}
	}
}
