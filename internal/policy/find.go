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

package policy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// Find reads the policies and the pod's namespace through r and returns
// the pod's policy (a copy the caller may keep). With no usable policy it
// returns nil and the PolicyMatched condition's reason and message: no
// policy selects the pod, the one its label names does not, or the match
// is not Ready.
func Find(ctx context.Context, r client.Reader, pod *corev1.Pod) (p *bindgatev1alpha1.BindingPolicy, reason, message string, err error) {
	var policies bindgatev1alpha1.BindingPolicyList
	// Read-only use: skip the deep copy of every policy (and its status).
	if err := r.List(ctx, &policies, client.UnsafeDisableDeepCopy); err != nil {
		return nil, "", "", fmt.Errorf("listing BindingPolicies: %w", err)
	}
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); err != nil {
		return nil, "", "", fmt.Errorf("reading namespace %s: %w", pod.Namespace, err)
	}
	p, reason, message = Match(pod, ns.Labels, policies.Items)
	if p == nil {
		return nil, reason, message, nil
	}
	if ready := meta.FindStatusCondition(p.Status.Conditions, bindgatev1alpha1.ConditionReady); ready != nil && ready.Status != "True" {
		return nil, bindgatev1alpha1.ReasonPolicyNotReady, fmt.Sprintf("BindingPolicy %s is not ready: %s", p.Name, ready.Message), nil
	}
	return p.DeepCopy(), "", "", nil // the cycle may keep it; the cache's copy is shared
}
