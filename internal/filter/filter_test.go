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

package filter_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/filter"
	"github.com/bindgate/bindgate/internal/framework"
)

func testNode(labels map[string]string, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func taint(key, value string, effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

func testPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func tolerate(key string, effect corev1.TaintEffect) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect})
	}
}

func nodeSelector(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{k: v} }
}

func requireAffinity(k string, values ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: k, Operator: corev1.NodeSelectorOpIn, Values: values}},
			}}},
		}}
	}
}

func testPolicy(sel *metav1.LabelSelector) *bindgatev1alpha1.BindingPolicy {
	return &bindgatev1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "policy", UID: "uid-policy", Generation: 1},
		Spec:       bindgatev1alpha1.BindingPolicySpec{NodeSelector: sel},
	}
}

// TestFilters: each plugin alone, with the code and reason it reports ("" and
// no code: the node passes).
func TestFilters(t *testing.T) {
	cases := map[string]struct {
		plugin     framework.FilterPlugin
		policy     *bindgatev1alpha1.BindingPolicy
		pod        *corev1.Pod
		node       *corev1.Node
		wantCode   framework.Code
		wantReason string
	}{
		"policy nodeSelector: none selects every node": {
			plugin: filter.PolicyNodeSelector{}, policy: testPolicy(nil), pod: testPod(), node: testNode(nil),
		},
		"policy nodeSelector: matching node": {
			plugin: filter.PolicyNodeSelector{},
			policy: testPolicy(&metav1.LabelSelector{MatchLabels: map[string]string{"pool": "gpu"}}),
			pod:    testPod(), node: testNode(map[string]string{"pool": "gpu"}),
		},
		"policy nodeSelector: other node": {
			plugin: filter.PolicyNodeSelector{},
			policy: testPolicy(&metav1.LabelSelector{MatchLabels: map[string]string{"pool": "gpu"}}),
			pod:    testPod(), node: testNode(map[string]string{"pool": "cpu"}),
			wantCode: framework.UnschedulableAndUnresolvable, wantReason: filter.ReasonPolicyNodeSelector,
		},
		"policy nodeSelector: one that does not parse rules out every node": {
			plugin: filter.PolicyNodeSelector{},
			policy: testPolicy(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "pool", Operator: "Near", Values: []string{"gpu"}},
			}}),
			pod: testPod(), node: testNode(map[string]string{"pool": "gpu"}),
			wantCode:   framework.UnschedulableAndUnresolvable,
			wantReason: `invalid policy nodeSelector: "Near" is not a valid label selector operator`,
		},
		"node affinity: no constraint": {
			plugin: filter.NodeAffinity{}, policy: testPolicy(nil), pod: testPod(), node: testNode(nil),
		},
		"node affinity: pod nodeSelector matches": {
			plugin: filter.NodeAffinity{}, policy: testPolicy(nil),
			pod: testPod(nodeSelector("zone", "a")), node: testNode(map[string]string{"zone": "a"}),
		},
		"node affinity: pod nodeSelector does not match": {
			plugin: filter.NodeAffinity{}, policy: testPolicy(nil),
			pod: testPod(nodeSelector("zone", "a")), node: testNode(map[string]string{"zone": "b"}),
			wantCode: framework.UnschedulableAndUnresolvable, wantReason: filter.ReasonNodeAffinity,
		},
		"node affinity: required term matches": {
			plugin: filter.NodeAffinity{}, policy: testPolicy(nil),
			pod: testPod(requireAffinity("zone", "a", "b")), node: testNode(map[string]string{"zone": "b"}),
		},
		"node affinity: required term does not match": {
			plugin: filter.NodeAffinity{}, policy: testPolicy(nil),
			pod: testPod(requireAffinity("zone", "a")), node: testNode(map[string]string{"zone": "c"}),
			wantCode: framework.UnschedulableAndUnresolvable, wantReason: filter.ReasonNodeAffinity,
		},
		"taints: untolerated NoSchedule": {
			plugin: filter.TaintToleration{}, policy: testPolicy(nil),
			pod: testPod(), node: testNode(nil, taint("dedicated", "db", corev1.TaintEffectNoSchedule)),
			wantCode: framework.UnschedulableAndUnresolvable, wantReason: "node(s) had untolerated taint {dedicated: db}",
		},
		"taints: untolerated NoExecute": {
			plugin: filter.TaintToleration{}, policy: testPolicy(nil),
			pod: testPod(), node: testNode(nil, taint("evict", "", corev1.TaintEffectNoExecute)),
			wantCode: framework.UnschedulableAndUnresolvable, wantReason: "node(s) had untolerated taint {evict: }",
		},
		"taints: PreferNoSchedule does not filter": {
			plugin: filter.TaintToleration{}, policy: testPolicy(nil),
			pod: testPod(), node: testNode(nil, taint("soft", "x", corev1.TaintEffectPreferNoSchedule)),
		},
		"taints: tolerated": {
			plugin: filter.TaintToleration{}, policy: testPolicy(nil),
			pod:  testPod(tolerate("dedicated", corev1.TaintEffectNoSchedule)),
			node: testNode(nil, taint("dedicated", "db", corev1.TaintEffectNoSchedule)),
		},
		"unschedulable: schedulable node": {
			plugin: filter.NodeUnschedulable{}, policy: testPolicy(nil), pod: testPod(), node: testNode(nil),
		},
		"unschedulable: cordoned node": {
			plugin: filter.NodeUnschedulable{}, policy: testPolicy(nil), pod: testPod(), node: testNode(nil, cordoned),
			wantCode: framework.UnschedulableAndUnresolvable, wantReason: filter.ReasonUnschedulable,
		},
		"unschedulable: cordoned node, pod tolerates it": {
			plugin: filter.NodeUnschedulable{}, policy: testPolicy(nil),
			pod:  testPod(tolerate(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)),
			node: testNode(nil, cordoned),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			state := framework.NewCycleState(tc.policy, tc.pod)
			st := tc.plugin.Filter(context.Background(), state, tc.pod, framework.NewNodeInfo(tc.node))
			var gotCode framework.Code
			gotReason := ""
			if st != nil {
				gotCode, gotReason = st.Code(), st.Message()
			}
			if gotCode != tc.wantCode || gotReason != tc.wantReason {
				t.Errorf("got %v %q, want %v %q", gotCode, gotReason, tc.wantCode, tc.wantReason)
			}
		})
	}
}

// TestPolicyNodeSelectorFollowsNode: the remembered match is dropped when
// the node's labels change.
func TestPolicyNodeSelectorFollowsNode(t *testing.T) {
	policy := testPolicy(&metav1.LabelSelector{MatchLabels: map[string]string{"pool": "gpu"}})
	pod := testPod()
	state := framework.NewCycleState(policy, pod)
	ni := framework.NewNodeInfo(testNode(map[string]string{"pool": "gpu"}))
	if st := (filter.PolicyNodeSelector{}).Filter(context.Background(), state, pod, ni); st != nil {
		t.Fatalf("matching node: %v", st.Message())
	}
	ni.SetNode(testNode(map[string]string{"pool": "cpu"}))
	if st := (filter.PolicyNodeSelector{}).Filter(context.Background(), state, pod, ni); st == nil {
		t.Error("the node lost the label, yet the policy's nodeSelector still selects it")
	}
}
