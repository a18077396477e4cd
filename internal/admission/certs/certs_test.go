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

package certs_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/bindgate/bindgate/internal/admission/certs"
	"github.com/bindgate/bindgate/internal/testenv"
)

// TestRotator runs the rotator against a real API server: it fills the empty
// Secret, injects the CA into both webhooks, re-injects it when the
// configuration is re-applied without one, and reports ready once the files
// are "mounted" (a goroutine plays the kubelet's Secret volume).
var runs atomic.Int64

func TestRotator(t *testing.T) {
	if testing.Short() {
		t.Skip("envtest suite; run without -short")
	}
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := env.Client

	const ns = "bindgate-system"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: certs.DefaultSecretName}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	mwc := generatedWebhookConfig(t)
	if err := c.Create(ctx, mwc); err != nil {
		t.Fatal(err)
	}

	certDir := t.TempDir()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A rotator per run: go test -count=N shares one process.
	opts := certs.Options{Namespace: ns, CertDir: certDir, ControllerName: fmt.Sprintf("rotator-%d", runs.Add(1))}
	ready, err := certs.SetupRotator(mgr, opts)
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	// The Secret gets a CA and a serving certificate.
	var data map[string][]byte
	poll(ctx, t, "the Secret to be filled", func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			return false, err
		}
		data = secret.Data
		return len(data["ca.crt"]) > 0 && len(data["tls.crt"]) > 0 && len(data["tls.key"]) > 0, nil
	})
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data["ca.crt"]) {
		t.Fatal("ca.crt holds no certificate")
	}
	pair, err := tls.X509KeyPair(data["tls.crt"], data["tls.key"])
	if err != nil {
		t.Fatalf("tls.crt/tls.key: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range opts.DNSNames() {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool}); err != nil {
			t.Errorf("serving certificate does not verify for %s: %v", name, err)
		}
	}

	// Both webhooks carry the CA.
	caInjected := func() (bool, error) {
		got := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(mwc), got); err != nil {
			return false, err
		}
		for _, wh := range got.Webhooks {
			if !bytes.Equal(wh.ClientConfig.CABundle, data["ca.crt"]) {
				return false, nil
			}
		}
		return len(got.Webhooks) == 2, nil
	}
	poll(ctx, t, "the CA bundle to be injected", caInjected)

	// Play the kubelet: "mount" the Secret into CertDir.
	for _, key := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(certDir, key), data[key], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatal("the rotator never reported ready")
	}

	// Re-applying the configuration without a CA bundle: it is re-injected.
	got := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(mwc), got); err != nil {
		t.Fatal(err)
	}
	for i := range got.Webhooks {
		got.Webhooks[i].ClientConfig.CABundle = nil
	}
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the CA bundle to be re-injected", caInjected)
}

// generatedWebhookConfig is config/webhook/manifests.yaml as kustomize
// renders it (namePrefix bindgate-, namespace bindgate-system).
func generatedWebhookConfig(t *testing.T) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), testenv.DefaultAdmissionManifests))
	if err != nil {
		t.Fatal(err)
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := yaml.UnmarshalStrict(bytes.TrimPrefix(raw, []byte("---\n")), mwc); err != nil {
		t.Fatal(err)
	}
	mwc.Name = "bindgate-" + mwc.Name
	if mwc.Name != certs.DefaultWebhookConfigName {
		t.Fatalf("generated configuration is %q, the rotator's default is %q", mwc.Name, certs.DefaultWebhookConfigName)
	}
	for i := range mwc.Webhooks {
		mwc.Webhooks[i].ClientConfig.Service.Namespace = "bindgate-system"
		mwc.Webhooks[i].ClientConfig.Service.Name = "bindgate-" + mwc.Webhooks[i].ClientConfig.Service.Name
	}
	return mwc
}

func poll(ctx context.Context, t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true,
		func(context.Context) (bool, error) { return cond() }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
