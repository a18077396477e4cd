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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bindgate/bindgate/internal/webhookclient"
)

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
