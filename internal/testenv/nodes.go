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
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// AddNode creates n, sets its status (a create ignores it) and removes the
// not-ready taint the API server adds to a new node (no node controller
// runs here to clear it). n is left as stored.
func (e *Env) AddNode(ctx context.Context, n *corev1.Node) error {
	status := n.Status
	if err := e.Client.Create(ctx, n); err != nil {
		return fmt.Errorf("creating node %s: %w", n.Name, err)
	}
	n.Status = status
	if err := e.Client.Status().Update(ctx, n); err != nil {
		return fmt.Errorf("node %s status: %w", n.Name, err)
	}
	var kept []corev1.Taint
	for _, tt := range n.Spec.Taints {
		if tt.Key != corev1.TaintNodeNotReady {
			kept = append(kept, tt)
		}
	}
	n.Spec.Taints = kept
	if err := e.Client.Update(ctx, n); err != nil {
		return fmt.Errorf("node %s taints: %w", n.Name, err)
	}
	return nil
}

// CreateNode is AddNode for a test: a failure ends the test, and the node
// is deleted when the test ends. It returns n, as stored.
func (e *Env) CreateNode(t testing.TB, n *corev1.Node) *corev1.Node {
	t.Helper()
	if err := e.AddNode(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), n) })
	return n
}
