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

package policy_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/policy"
)

type policyBuilder struct {
	p bindgatev1alpha1.BindingPolicy
}

func newPolicy(name string) *policyBuilder {
	return &policyBuilder{p: bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

func (b *policyBuilder) priority(n int32) *policyBuilder { b.p.Spec.Priority = n; return b }

func (b *policyBuilder) pods(k, v string) *policyBuilder {
	b.p.Spec.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	return b
}

func (b *policyBuilder) namespaces(k, v string) *policyBuilder {
	b.p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	return b
}

func (b *policyBuilder) invalidPods() *policyBuilder {
	b.p.Spec.PodSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "app", Operator: "Near"},
	}}
	return b
}

func (b *policyBuilder) deleting() *policyBuilder {
	now := metav1.Now()
	b.p.DeletionTimestamp = &now
	return b
}

func (b *policyBuilder) dryRun() *policyBuilder {
	b.p.Spec.Mode = bindgatev1alpha1.ModeDryRun
	return b
}

func (b *policyBuilder) obj() bindgatev1alpha1.BindingPolicy { return b.p }

func TestMatch(t *testing.T) {
	cases := map[string]struct {
		podLabels  map[string]string
		nsLabels   map[string]string
		policies   []bindgatev1alpha1.BindingPolicy
		want       string
		wantCode   string // NoPolicy unless set, when nothing matches
		wantReason string
	}{
		"no policies": {
			wantReason: "no BindingPolicy selects this pod",
		},
		"selectors left out select every pod": {
			policies: []bindgatev1alpha1.BindingPolicy{newPolicy("all").obj()},
			want:     "all",
		},
		"pod selector": {
			podLabels: map[string]string{"app": "web"},
			policies: []bindgatev1alpha1.BindingPolicy{
				newPolicy("db").pods("app", "db").priority(10).obj(), newPolicy("web").pods("app", "web").obj(),
			},
			want: "web",
		},
		"namespace selector": {
			nsLabels: map[string]string{"team": "a"},
			policies: []bindgatev1alpha1.BindingPolicy{
				newPolicy("b").namespaces("team", "b").priority(10).obj(), newPolicy("a").namespaces("team", "a").obj(),
			},
			want: "a",
		},
		"highest priority wins": {
			policies: []bindgatev1alpha1.BindingPolicy{
				newPolicy("low").priority(1).obj(), newPolicy("high").priority(5).obj(), newPolicy("mid").priority(3).obj(),
			},
			want: "high",
		},
		"equal priority: smallest name": {
			policies: []bindgatev1alpha1.BindingPolicy{
				newPolicy("zeta").priority(2).obj(), newPolicy("alpha").priority(2).obj(), newPolicy("mid").priority(2).obj(),
			},
			want: "alpha",
		},
		"a policy being deleted takes no pods": {
			policies: []bindgatev1alpha1.BindingPolicy{
				newPolicy("going").priority(9).deleting().obj(), newPolicy("staying").obj(),
			},
			want: "staying",
		},
		"a selector that does not parse selects nothing": {
			podLabels:  map[string]string{"app": "web"},
			policies:   []bindgatev1alpha1.BindingPolicy{newPolicy("broken").invalidPods().priority(9).obj()},
			wantReason: "no BindingPolicy selects this pod",
		},
		"the policy label chooses among the policies that select the pod, over priority": {
			podLabels: map[string]string{bindgatev1alpha1.PolicyLabel: "named", "app": "web"},
			nsLabels:  map[string]string{"team": "a"},
			policies: []bindgatev1alpha1.BindingPolicy{
				newPolicy("web").pods("app", "web").priority(100).obj(),
				newPolicy("named").pods("app", "web").namespaces("team", "a").obj(),
			},
			want: "named",
		},
		"the policy label names a policy whose pod selector does not select the pod": {
			podLabels: map[string]string{bindgatev1alpha1.PolicyLabel: "db", "app": "web"},
			policies: []bindgatev1alpha1.BindingPolicy{
				newPolicy("web").pods("app", "web").obj(), newPolicy("db").pods("app", "db").obj(),
			},
			wantCode:   bindgatev1alpha1.ReasonPolicyDoesNotSelect,
			wantReason: `BindingPolicy "db" named by label ` + bindgatev1alpha1.PolicyLabel + " does not select this pod (its namespaceSelector or podSelector does not match)",
		},
		"the policy label names another team's policy": {
			podLabels: map[string]string{bindgatev1alpha1.PolicyLabel: "team-b"},
			nsLabels:  map[string]string{"team": "a"},
			policies: []bindgatev1alpha1.BindingPolicy{
				newPolicy("team-a").namespaces("team", "a").obj(), newPolicy("team-b").namespaces("team", "b").obj(),
			},
			wantCode:   bindgatev1alpha1.ReasonPolicyDoesNotSelect,
			wantReason: `BindingPolicy "team-b" named by label ` + bindgatev1alpha1.PolicyLabel + " does not select this pod (its namespaceSelector or podSelector does not match)",
		},
		"the policy label names a policy whose selector does not parse": {
			podLabels:  map[string]string{bindgatev1alpha1.PolicyLabel: "broken"},
			policies:   []bindgatev1alpha1.BindingPolicy{newPolicy("broken").invalidPods().obj()},
			wantCode:   bindgatev1alpha1.ReasonPolicyDoesNotSelect,
			wantReason: `BindingPolicy "broken" named by label ` + bindgatev1alpha1.PolicyLabel + " does not select this pod (its namespaceSelector or podSelector does not match)",
		},
		"the policy label names a missing policy": {
			podLabels:  map[string]string{bindgatev1alpha1.PolicyLabel: "missing"},
			policies:   []bindgatev1alpha1.BindingPolicy{newPolicy("all").obj()},
			wantReason: `BindingPolicy "missing" named by label ` + bindgatev1alpha1.PolicyLabel + " does not exist",
		},
		"a DryRun policy takes no pod, whatever its priority": {
			policies: []bindgatev1alpha1.BindingPolicy{
				newPolicy("trial").priority(900).dryRun().obj(), newPolicy("live").priority(1).obj(),
			},
			want: "live",
		},
		"only a DryRun policy selects the pod": {
			policies:   []bindgatev1alpha1.BindingPolicy{newPolicy("trial").dryRun().obj()},
			wantReason: "no BindingPolicy selects this pod",
		},
		"the policy label names a DryRun policy": {
			podLabels:  map[string]string{bindgatev1alpha1.PolicyLabel: "trial"},
			policies:   []bindgatev1alpha1.BindingPolicy{newPolicy("trial").dryRun().obj(), newPolicy("all").obj()},
			wantReason: `BindingPolicy "trial" named by label ` + bindgatev1alpha1.PolicyLabel + " is in DryRun mode: it takes no pod",
		},
		"the policy label names a policy being deleted": {
			podLabels:  map[string]string{bindgatev1alpha1.PolicyLabel: "going"},
			policies:   []bindgatev1alpha1.BindingPolicy{newPolicy("going").deleting().obj(), newPolicy("all").obj()},
			wantReason: `BindingPolicy "going" named by label ` + bindgatev1alpha1.PolicyLabel + " is being deleted",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: tc.podLabels}}
			got, code, reason := policy.Match(pod, tc.nsLabels, tc.policies)
			gotName := ""
			if got != nil {
				gotName = got.Name
			}
			wantCode := tc.wantCode
			if wantCode == "" && tc.want == "" {
				wantCode = bindgatev1alpha1.ReasonNoPolicy
			}
			if gotName != tc.want || code != wantCode || reason != tc.wantReason {
				t.Errorf("got %q (%s: %q), want %q (%s: %q)", gotName, code, reason, tc.want, wantCode, tc.wantReason)
			}
			if got != nil && reason != "" {
				t.Errorf("a match came with a reason: %q", reason)
			}
		})
	}
}

func TestDryRunTakers(t *testing.T) {
	cases := map[string]struct {
		podLabels map[string]string
		policies  []bindgatev1alpha1.BindingPolicy
		want      []string
	}{
		"a DryRun policy above the Enforce one": {
			policies: []bindgatev1alpha1.BindingPolicy{newPolicy("live").priority(1).obj(), newPolicy("trial").priority(9).dryRun().obj()},
			want:     []string{"trial"},
		},
		"a DryRun policy below the Enforce one would not take the pod": {
			policies: []bindgatev1alpha1.BindingPolicy{newPolicy("live").priority(9).obj(), newPolicy("trial").priority(1).dryRun().obj()},
		},
		"each DryRun policy is judged as if it alone were enforced": {
			policies: []bindgatev1alpha1.BindingPolicy{
				newPolicy("a").priority(5).dryRun().obj(), newPolicy("b").priority(7).dryRun().obj(), newPolicy("live").priority(1).obj(),
			},
			want: []string{"a", "b"},
		},
		"a DryRun policy that does not select the pod": {
			podLabels: map[string]string{"app": "web"},
			policies:  []bindgatev1alpha1.BindingPolicy{newPolicy("trial").pods("app", "db").priority(9).dryRun().obj()},
		},
		"the pod's policy label names the Enforce policy": {
			podLabels: map[string]string{bindgatev1alpha1.PolicyLabel: "live"},
			policies:  []bindgatev1alpha1.BindingPolicy{newPolicy("live").obj(), newPolicy("trial").priority(9).dryRun().obj()},
		},
		"the pod's policy label names the DryRun policy": {
			podLabels: map[string]string{bindgatev1alpha1.PolicyLabel: "trial"},
			policies:  []bindgatev1alpha1.BindingPolicy{newPolicy("live").priority(9).obj(), newPolicy("trial").dryRun().obj()},
			want:      []string{"trial"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: tc.podLabels}}
			var got []string
			for _, p := range policy.DryRunTakers(pod, nil, tc.policies) {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DryRun takers (-want +got):\n%s", diff)
			}
			for _, p := range tc.policies {
				if p.Name != "live" && p.Spec.Mode != bindgatev1alpha1.ModeDryRun {
					t.Errorf("DryRunTakers changed the mode of %s", p.Name)
				}
			}
		})
	}
}
