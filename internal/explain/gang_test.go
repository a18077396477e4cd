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

package explain

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// member is a gated pod of gang g in namespace ns.
func member(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID(name),
			Labels: map[string]string{bindgatev1alpha1.GroupLabel: "g"},
		},
		Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// TestGangCounted: a gang member the operator has not yet told why it
// waits (a gang's wait is reported once it has waited a second) gets the
// wait explain counts itself, in the operator's words; a reported wait is
// kept as reported.
func TestGangCounted(t *testing.T) {
	pol := &bindgatev1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: bindgatev1alpha1.BindingPolicySpec{Permit: &bindgatev1alpha1.Permit{
			Conditions: []bindgatev1alpha1.PermitCondition{{Name: "gang", Gang: &bindgatev1alpha1.GangCondition{MinMember: 3}}},
		}},
	}
	bound := func(p *corev1.Pod) { p.Spec.SchedulingGates, p.Spec.NodeName = nil, "n1" }
	other := func(p *corev1.Pod) { p.Namespace = "other" }
	notOurs := func(p *corev1.Pod) { p.Spec.SchedulingGates = nil }
	elsewhere := func(p *corev1.Pod) { p.Labels[bindgatev1alpha1.GroupLabel] = "h" }
	deleted := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }
	reported := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{
			Type: bindgatev1alpha1.PodConditionPermitted, Status: corev1.ConditionFalse,
			Reason: "Waiting", Message: "rejected by permit condition gang: gang g: 1/3 members exist, none reserved",
		}}
	}
	tests := map[string]struct {
		pod    *corev1.Pod
		others []*corev1.Pod
		want   []ConditionVerdict
	}{
		"alone": {
			pod:  member("m0"),
			want: []ConditionVerdict{{Name: "gang", Kind: "gang", Verdict: VerdictWaiting, Message: "gang g: 1/3 members exist, none reserved"}},
		},
		"a member bound, one waiting, others not counted": {
			pod:    member("m0"),
			others: []*corev1.Pod{member("m1", bound), member("m2", other), member("m3", notOurs), member("m4", elsewhere), member("m5", deleted)},
			want:   []ConditionVerdict{{Name: "gang", Kind: "gang", Verdict: VerdictWaiting, Message: "gang g: 2/3 members exist, none reserved"}},
		},
		"complete: placed in the next cycle": {
			pod:    member("m0"),
			others: []*corev1.Pod{member("m1"), member("m2")},
			want: []ConditionVerdict{{Name: "gang", Kind: "gang", Verdict: VerdictNotEvaluated,
				Message: "the pod holds no reservation under this policy: conditions are evaluated once it is reserved on a node"}},
		},
		"reported by the operator": {
			pod:    member("m0", reported),
			others: []*corev1.Pod{member("m1")},
			want:   []ConditionVerdict{{Name: "gang", Kind: "gang", Verdict: VerdictWaiting, Message: "gang g: 1/3 members exist, none reserved"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := &state{pods: map[types.UID]*corev1.Pod{tc.pod.UID: tc.pod}, recorded: map[types.UID]recorded{}}
			for _, p := range tc.others {
				s.pods[p.UID] = p
			}
			got := s.permitVerdicts(context.Background(), tc.pod, pol, nil)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}
