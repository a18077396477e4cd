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

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/bindgate/bindgate/internal/webhooks/certs"
	"github.com/bindgate/bindgate/internal/webhooks/podgate"
	policywebhook "github.com/bindgate/bindgate/internal/webhooks/policy"
)

// Webhook certificate modes.
const (
	certModeNone       = "none"
	certModeSelfSigned = "self-signed"
	certModeCertMgr    = "cert-manager"
)

// webhookOptions configure the admission webhook server.
type webhookOptions struct {
	certMode string
	podMode  string
	port     int
	certs    certs.Options
}

func (o *webhookOptions) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.certMode, "webhook-cert-mode", certModeNone,
		"Serve the admission webhooks, and who provides their serving certificate: self-signed (the operator generates and rotates it in --webhook-cert-secret), cert-manager (mounted in --webhook-cert-dir by cert-manager), or none (no webhook).")
	fs.StringVar(&o.podMode, "pod-webhook-mode", string(podgate.ModeGate),
		"How the pod webhook hands new pods to bindgate: gate (add the scheduling gate; bindgate lifts it with one more API write before binding) or scheduler-name (set spec.schedulerName: bindgate on pods left to the default scheduler, which saves that write; pods naming another scheduler are gated).")
	fs.IntVar(&o.port, "webhook-port", 9443, "The port the webhook server listens on.")
	fs.StringVar(&o.certs.CertDir, "webhook-cert-dir", certs.DefaultCertDir, "The directory holding the webhook's tls.crt and tls.key (the mounted Secret).")
	fs.StringVar(&o.certs.SecretName, "webhook-cert-secret", certs.DefaultSecretName, "self-signed: the Secret, in the operator's namespace, that holds the serving certificate.")
	fs.StringVar(&o.certs.ServiceName, "webhook-service-name", certs.DefaultServiceName, "self-signed: the webhook Service the certificate is issued for.")
	fs.StringVar(&o.certs.WebhookConfigName, "webhook-config-name", certs.DefaultWebhookConfigName, "self-signed: the MutatingWebhookConfiguration whose caBundle is kept in sync.")
	fs.StringVar(&o.certs.ValidatingWebhookConfigName, "validating-webhook-config-name", certs.DefaultValidatingWebhookConfigName, "self-signed: the ValidatingWebhookConfiguration (BindingPolicy checks) whose caBundle is kept in sync; empty to leave it alone.")
}

func (o *webhookOptions) validate() error {
	if _, err := podgate.ParseMode(o.podMode); err != nil {
		return err
	}
	switch o.certMode {
	case certModeNone, certModeSelfSigned, certModeCertMgr:
		return nil
	}
	return fmt.Errorf("--webhook-cert-mode=%q: want self-signed, cert-manager or none", o.certMode)
}

func (o *webhookOptions) server() webhook.Server {
	return webhook.NewServer(webhook.Options{Port: o.port, CertDir: o.certs.CertDir})
}

// registerWebhooks registers the admission handlers on the manager's webhook
// server (the first registration starts it, so it runs only once a serving
// certificate exists).
func registerWebhooks(mgr ctrl.Manager, podMode podgate.Mode) error {
	if err := podgate.Setup(mgr, podMode); err != nil {
		return err
	}
	return policywebhook.Setup(mgr)
}

// setupWebhooks wires the webhook server per --webhook-cert-mode and a
// readiness check that holds until it serves.
func setupWebhooks(ctx context.Context, mgr ctrl.Manager, o *webhookOptions) error {
	if o.certMode == certModeNone {
		return nil
	}
	var serving atomic.Bool
	switch o.certMode {
	case certModeCertMgr:
		if err := registerWebhooks(mgr, podgate.Mode(o.podMode)); err != nil {
			return fmt.Errorf("setting up the webhooks: %w", err)
		}
		serving.Store(true)
	case certModeSelfSigned:
		o.certs.Namespace = operatorNamespace()
		ready, err := certs.SetupRotator(mgr, o.certs)
		if err != nil {
			return fmt.Errorf("setting up the webhook certificate rotator: %w", err)
		}
		go func() {
			select {
			case <-ready:
			case <-ctx.Done():
				return
			}
			if err := registerWebhooks(mgr, podgate.Mode(o.podMode)); err != nil {
				ctrl.Log.WithName("setup").Error(err, "Unable to set up the webhooks")
				os.Exit(1)
			}
			serving.Store(true)
		}()
	}
	if err := mgr.AddReadyzCheck("webhook", func(req *http.Request) error {
		if !serving.Load() {
			return errors.New("the webhook serving certificate is not ready yet")
		}
		return mgr.GetWebhookServer().StartedChecker()(req)
	}); err != nil {
		return fmt.Errorf("adding the webhook ready check: %w", err)
	}
	return nil
}

// operatorNamespace is the namespace the operator runs in.
func operatorNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}
