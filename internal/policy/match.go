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

// Package policy matches pods to BindingPolicies.
package policy

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// Match returns the policy that takes pod: the one named by the label
// scheduling.bindgate.dev/policy if set, else the highest-priority policy
// whose namespace and pod selectors match (ties: the smallest name). With
// no match it returns nil and the reason.
func Match(pod *corev1.Pod, nsLabels map[string]string, policies []bindgatev1alpha1.BindingPolicy) (*bindgatev1alpha1.BindingPolicy, string) {
	if name, ok := pod.Labels[bindgatev1alpha1.PolicyLabel]; ok {
		for i := range policies {
			if policies[i].Name != name {
				continue
			}
			if policies[i].DeletionTimestamp != nil {
				return nil, fmt.Sprintf("BindingPolicy %q named by label %s is being deleted", name, bindgatev1alpha1.PolicyLabel)
			}
			return &policies[i], ""
		}
		return nil, fmt.Sprintf("BindingPolicy %q named by label %s does not exist", name, bindgatev1alpha1.PolicyLabel)
	}
	var best *bindgatev1alpha1.BindingPolicy
	for i := range policies {
		p := &policies[i]
		if p.DeletionTimestamp != nil || !selects(p.Spec.NamespaceSelector, nsLabels) || !selects(p.Spec.PodSelector, pod.Labels) {
			continue
		}
		if best == nil || p.Spec.Priority > best.Spec.Priority || (p.Spec.Priority == best.Spec.Priority && p.Name < best.Name) {
			best = p
		}
	}
	if best == nil {
		return nil, "no BindingPolicy selects this pod"
	}
	return best, ""
}

func selects(sel *metav1.LabelSelector, set map[string]string) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set(set))
}
