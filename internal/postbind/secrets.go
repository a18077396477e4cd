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

package postbind

import (
	"context"
	"crypto/x509"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// Validate returns a BindingPolicyReconciler.Validate check for the permit,
// bind and postBind webhooks: each URL must pass webhookclient.ValidateURL
// (https, a host, no user info, no literal address dest refuses) and each CA
// bundle must hold a PEM certificate. A policy that fails is not Ready, so
// no pod binds under it and no request leaves.
func Validate(dest webhookclient.Destinations) func(*bindgatev1alpha1.BindingPolicy) (reason, message string, ok bool) {
	return func(p *bindgatev1alpha1.BindingPolicy) (string, string, bool) {
		if p.Spec.Bind != nil && p.Spec.Bind.Webhook != nil {
			if msg := checkWebhook(p.Spec.Bind.Webhook, dest); msg != "" {
				return bindgatev1alpha1.ReasonInvalidWebhook, "spec.bind.webhook: " + msg, false
			}
		}
		if p.Spec.Permit != nil {
			for i := range p.Spec.Permit.Conditions {
				c := &p.Spec.Permit.Conditions[i]
				if c.Webhook == nil {
					continue
				}
				if msg := checkWebhook(&c.Webhook.Webhook, dest); msg != "" {
					return bindgatev1alpha1.ReasonInvalidWebhook, fmt.Sprintf("spec.permit.conditions[%d] (%s): %s", i, c.Name, msg), false
				}
			}
		}
		for i := range p.Spec.PostBind {
			h := &p.Spec.PostBind[i]
			if msg := checkWebhook(&h.Webhook, dest); msg != "" {
				return bindgatev1alpha1.ReasonInvalidWebhook, fmt.Sprintf("spec.postBind[%d] (%s): %s", i, h.Name, msg), false
			}
		}
		return "", "", true
	}
}

func checkWebhook(wh *bindgatev1alpha1.Webhook, dest webhookclient.Destinations) string {
	if err := webhookclient.ValidateURL(webhookclient.URLOf(wh), dest); err != nil {
		return "url " + err.Error()
	}
	if len(wh.CABundle) > 0 && !x509.NewCertPool().AppendCertsFromPEM(wh.CABundle) {
		return "caBundle contains no valid PEM certificate"
	}
	return ""
}

// SecretReader is the webhookclient.SecretGetter of the operator: it reads
// Secrets through Reader (the manager's API reader, so no cluster-wide
// Secret informer is started) and only in Namespace, the operator's own.
type SecretReader struct {
	Reader    client.Reader
	Namespace string
}

var _ webhookclient.SecretGetter = SecretReader{}

// GetSecretKey implements webhookclient.SecretGetter.
func (s SecretReader) GetSecretKey(ctx context.Context, namespace, name, key string) ([]byte, error) {
	if namespace != s.Namespace {
		return nil, fmt.Errorf("secrets are read only from the operator namespace %q", s.Namespace)
	}
	secret := &corev1.Secret{}
	if err := s.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		return nil, fmt.Errorf("reading secret: %w", err)
	}
	v, ok := secret.Data[key]
	if !ok {
		return nil, fmt.Errorf("secret has no key %q", key)
	}
	return v, nil
}
