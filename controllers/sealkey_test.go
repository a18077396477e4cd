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

package controllers_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bindgate/bindgate/controllers"
	"github.com/bindgate/bindgate/internal/bind"
)

// TestLoadSealKey: the key is generated once, into the Secret the installs
// create empty (or a new one), and every replica, started at once or later,
// reads the same key.
func TestLoadSealKey(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, nil)
	cases := map[string]struct{ precreate bool }{
		"the installs' empty Secret": {precreate: true},
		"no Secret yet":              {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			key := types.NamespacedName{Namespace: ns, Name: uniq("seal")}
			if tc.precreate {
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
				if err := env.Client.Create(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			keys := make([][]byte, 8)
			var wg sync.WaitGroup
			for i := range keys {
				wg.Go(func() {
					k, err := controllers.LoadSealKey(ctx, env.Client, env.Client, key)
					if err != nil {
						t.Error(err)
					}
					keys[i] = k
				})
			}
			wg.Wait()
			for i, k := range keys {
				if len(k) != bind.SealKeyBytes || !bytes.Equal(k, keys[0]) {
					t.Fatalf("replica %d got key %x, replica 0 %x", i, k, keys[0])
				}
			}
			later, err := controllers.LoadSealKey(ctx, env.Client, env.Client, key)
			if err != nil || !bytes.Equal(later, keys[0]) {
				t.Errorf("a later start got %x (%v), want the stored key", later, err)
			}
		})
	}
	if _, err := controllers.LoadSealKey(ctx, env.Client, env.Client, types.NamespacedName{Name: "x"}); err == nil {
		t.Error("no error without --operator-namespace")
	}
}
