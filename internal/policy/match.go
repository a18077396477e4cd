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

// Match returns the policy that takes pod: the highest-priority policy
// whose namespace and pod selectors select it (ties: the smallest name),
// among the policies in Enforce mode (a DryRun policy takes no pod).
// The label scheduling.bindgate.dev/policy only chooses among the policies
// that select the pod: naming one that does not is refused, never obeyed,
// so a pod's owner cannot steer it into another team's policy. With no
// match it returns nil, the condition reason and a message that says why.
func Match(pod *corev1.Pod, nsLabels map[string]string, policies []bindgatev1alpha1.BindingPolicy) (*bindgatev1alpha1.BindingPolicy, string, string) {
	if name, ok := pod.Labels[bindgatev1alpha1.PolicyLabel]; ok {
		for i := range policies {
			p := &policies[i]
			if p.Name != name {
				continue
			}
			if p.DeletionTimestamp != nil {
				return nil, bindgatev1alpha1.ReasonNoPolicy,
					fmt.Sprintf("BindingPolicy %q named by label %s is being deleted", name, bindgatev1alpha1.PolicyLabel)
			}
			if !Selects(p, pod, nsLabels) {
				return nil, bindgatev1alpha1.ReasonPolicyDoesNotSelect,
					fmt.Sprintf("BindingPolicy %q named by label %s does not select this pod (its namespaceSelector or podSelector does not match)", name, bindgatev1alpha1.PolicyLabel)
			}
			if IsDryRun(p) {
				return nil, bindgatev1alpha1.ReasonNoPolicy,
					fmt.Sprintf("BindingPolicy %q named by label %s is in DryRun mode: it takes no pod", name, bindgatev1alpha1.PolicyLabel)
			}
			return p, "", ""
		}
		return nil, bindgatev1alpha1.ReasonNoPolicy,
			fmt.Sprintf("BindingPolicy %q named by label %s does not exist", name, bindgatev1alpha1.PolicyLabel)
	}
	var best *bindgatev1alpha1.BindingPolicy
	for i := range policies {
		p := &policies[i]
		if p.DeletionTimestamp != nil || IsDryRun(p) || !Selects(p, pod, nsLabels) {
			continue
		}
		if best == nil || p.Spec.Priority > best.Spec.Priority || (p.Spec.Priority == best.Spec.Priority && p.Name < best.Name) {
			best = p
		}
	}
	if best == nil {
		return nil, bindgatev1alpha1.ReasonNoPolicy, "no BindingPolicy selects this pod"
	}
	return best, "", ""
}

// Selects says whether p's namespace and pod selectors both select pod in
// a namespace labelled nsLabels. A selector that does not parse selects
// nothing.
func Selects(p *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod, nsLabels map[string]string) bool {
	return SelectorSelects(p.Spec.NamespaceSelector, nsLabels) && SelectorSelects(p.Spec.PodSelector, pod.Labels)
}

// SelectorSelects says whether one of a policy's selectors selects set:
// nil selects everything, a selector that does not parse nothing.
func SelectorSelects(sel *metav1.LabelSelector, set map[string]string) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set(set))
}

// IsDryRun says whether p is in DryRun mode: it takes no pod.
func IsDryRun(p *bindgatev1alpha1.BindingPolicy) bool {
	return p.Spec.Mode == bindgatev1alpha1.ModeDryRun
}

// DryRunTakers returns the DryRun policies that would take pod were each
// of them switched to Enforce (alone: the other DryRun policies stay
// DryRun), in the order of policies.
func DryRunTakers(pod *corev1.Pod, nsLabels map[string]string, policies []bindgatev1alpha1.BindingPolicy) []*bindgatev1alpha1.BindingPolicy {
	var out []*bindgatev1alpha1.BindingPolicy
	for i := range policies {
		d := &policies[i]
		if !IsDryRun(d) || d.DeletionTimestamp != nil || !Selects(d, pod, nsLabels) {
			continue
		}
		if p, _, _ := Match(pod, nsLabels, AsEnforced(policies, d.Name)); p != nil && p.Name == d.Name {
			out = append(out, d)
		}
	}
	return out
}

// AsEnforced returns policies with the one named name switched to Enforce
// (a copy; policies is not changed).
func AsEnforced(policies []bindgatev1alpha1.BindingPolicy, name string) []bindgatev1alpha1.BindingPolicy {
	out := make([]bindgatev1alpha1.BindingPolicy, len(policies))
	copy(out, policies)
	for i := range out {
		if out[i].Name == name {
			spec := out[i].Spec
			spec.Mode = bindgatev1alpha1.ModeEnforce
			out[i].Spec = spec
		}
	}
	return out
}
