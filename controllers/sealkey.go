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

package controllers

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/options"
)

// sealKeyField is the Secret's key that holds the seal key.
const sealKeyField = "key"

// useSealKey loads the seal key from the Secret opts name in the
// operator's namespace and hands it to internal/bind.
func useSealKey(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	secret := opts.SealKeySecret
	if secret == "" {
		secret = options.DefaultSealKeySecret
	}
	key, err := loadSealKey(ctx, mgr.GetClient(), mgr.GetAPIReader(), types.NamespacedName{Namespace: opts.Namespace, Name: secret})
	if err != nil {
		return err
	}
	bind.UseSealKey(key)
	return nil
}

// loadSealKey reads the seal key from the Secret ns/name, generating it
// when the Secret is empty (creating the Secret when it does not exist, as
// when the operator runs outside the installs). Two replicas starting at
// once agree: the loser of the write conflict reads the winner's key.
func loadSealKey(ctx context.Context, c client.Client, live client.Reader, key types.NamespacedName) ([]byte, error) {
	if key.Namespace == "" {
		return nil, errors.New("--operator-namespace is empty: the seal key Secret lives in the operator's namespace")
	}
	var out []byte
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		s := &corev1.Secret{}
		err := live.Get(ctx, key, s)
		missing := apierrors.IsNotFound(err)
		switch {
		case err != nil && !missing:
			return err
		case missing:
			s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		case len(s.Data[sealKeyField]) >= bind.SealKeyBytes:
			out = s.Data[sealKeyField]
			return nil
		}
		k := make([]byte, bind.SealKeyBytes)
		if _, err := rand.Read(k); err != nil {
			return fmt.Errorf("generating the seal key: %w", err)
		}
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[sealKeyField] = k
		if missing {
			err = c.Create(ctx, s)
		} else {
			err = c.Update(ctx, s)
		}
		if err != nil {
			return err
		}
		out = k
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading the seal key from Secret %s (--seal-key-secret): %w", key, err)
	}
	return out, nil
}
