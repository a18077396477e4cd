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

// Package certs keeps the webhook's serving certificate without
// cert-manager: github.com/open-policy-agent/cert-controller generates a
// self-signed CA and a serving certificate into a Secret (which the
// Deployment mounts at CertDir), rotates them before they expire, and keeps
// the caBundle of every webhook in the MutatingWebhookConfiguration in sync
// with the CA.
//
// The Secret must exist (the Helm chart and config/webhook create it empty);
// the operator needs get/list/watch/update on it in its namespace and
// get/list/watch/update on the MutatingWebhookConfiguration — rules that name
// the install's namespace and objects, so they live in the chart and in
// config/rbac rather than in +kubebuilder:rbac markers.
package certs

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Defaults match config/default (namePrefix bindgate-) and the Helm chart
// installed as release "bindgate".
const (
	DefaultSecretName        = "bindgate-webhook-server-cert"
	DefaultServiceName       = "bindgate-webhook-service"
	DefaultWebhookConfigName = "bindgate-mutating-webhook-configuration"
	// DefaultValidatingWebhookConfigName is the BindingPolicy validating
	// webhook configuration.
	DefaultValidatingWebhookConfigName = "bindgate-validating-webhook-configuration"
	// DefaultCertDir is controller-runtime's default webhook CertDir.
	DefaultCertDir = "/tmp/k8s-webhook-server/serving-certs"
)

// Options name the objects the rotator keeps.
type Options struct {
	// Namespace holds the Secret and the Service (the operator's namespace).
	Namespace string
	// SecretName is the Secret that receives ca.crt, ca.key, tls.crt and tls.key.
	SecretName string
	// ServiceName is the webhook Service; the certificate is issued for
	// <service>.<namespace>.svc (and .svc.cluster.local).
	ServiceName string
	// WebhookConfigName is the MutatingWebhookConfiguration whose webhooks
	// get the CA bundle.
	WebhookConfigName string
	// ValidatingWebhookConfigName, when set, is the ValidatingWebhookConfiguration
	// whose caBundle is kept current too.
	ValidatingWebhookConfigName string
	// CertDir is where the Secret is mounted; the returned channel closes
	// once tls.crt is there and the CA bundle is injected.
	CertDir string
	// ControllerName names the rotator's controller (default
	// bindgate-webhook-cert-rotator); names are unique per process.
	ControllerName string
}

func (o *Options) defaults() error {
	if o.Namespace == "" {
		return errors.New("certs: the namespace is required")
	}
	o.defaultNames()
	return nil
}

func (o *Options) defaultNames() {
	if o.SecretName == "" {
		o.SecretName = DefaultSecretName
	}
	if o.ServiceName == "" {
		o.ServiceName = DefaultServiceName
	}
	if o.WebhookConfigName == "" {
		o.WebhookConfigName = DefaultWebhookConfigName
	}
	if o.CertDir == "" {
		o.CertDir = DefaultCertDir
	}
}

// DNSNames are the names the serving certificate is issued for.
func (o Options) DNSNames() []string {
	o.defaultNames()
	svc := o.ServiceName + "." + o.Namespace
	return []string{svc + ".svc", svc + ".svc.cluster.local", svc}
}

// SetupRotator adds the certificate rotator to mgr. It runs in every replica
// (not only the leader), because every replica serves the webhook. The
// returned channel is closed when the certificate is mounted in CertDir and
// the CA bundle is injected: only then register the webhooks (the first
// mgr.GetWebhookServer call starts the server, which needs the files).
func SetupRotator(mgr ctrl.Manager, opts Options) (chan struct{}, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	names := opts.DNSNames()
	ready := make(chan struct{})
	cr := &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: opts.Namespace, Name: opts.SecretName},
		CertDir:        strings.TrimSuffix(opts.CertDir, "/"),
		CAName:         "bindgate-webhook-ca",
		CAOrganization: "bindgate",
		DNSName:        names[0],
		ExtraDNSNames:  names[1:],
		IsReady:        ready,
		Webhooks:       opts.webhooks(),
		FieldOwner:     "bindgate-cert-rotator",
		// controller-runtime's certwatcher reloads rotated files; no restart.
		RestartOnSecretRefresh: false,
		RequireLeaderElection:  false,
		ControllerName:         cmp.Or(opts.ControllerName, "bindgate-webhook-cert-rotator"),
	}
	if err := rotator.AddRotator(mgr, cr); err != nil {
		return nil, fmt.Errorf("adding the webhook certificate rotator: %w", err)
	}
	return ready, nil
}

// webhooks are the configurations whose caBundle the rotator keeps current.
func (o *Options) webhooks() []rotator.WebhookInfo {
	w := []rotator.WebhookInfo{{Name: o.WebhookConfigName, Type: rotator.Mutating}}
	if o.ValidatingWebhookConfigName != "" {
		w = append(w, rotator.WebhookInfo{Name: o.ValidatingWebhookConfigName, Type: rotator.Validating})
	}
	return w
}
