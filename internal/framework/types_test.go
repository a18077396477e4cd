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

package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestMatchesPolicy: the answer is remembered per policy generation and
// node object, and asked again when either changes. Labels are changed in
// place below only to tell a remembered answer from a fresh one (the cache
// replaces the node object through SetNode on every update).
func TestMatchesPolicy(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"pool": "batch"})
	p1g1, p1g2, p2g2 := KeyOf("p1", 1), KeyOf("p1", 2), KeyOf("p2", 2)
	steps := []struct {
		name   string
		change func(ni *NodeInfo)
		key    PolicyKey
		want   bool
	}{
		{name: "first answer", key: p1g1, want: true},
		{name: "remembered for the same generation", change: func(ni *NodeInfo) { ni.Node.Labels["pool"] = "web" }, key: p1g1, want: true},
		{name: "asked again for a new generation", key: p1g2, want: false},
		{name: "asked again for another policy", change: func(ni *NodeInfo) { ni.Node.Labels["pool"] = "batch" }, key: p2g2, want: true},
		{name: "asked again for a new node object", change: func(ni *NodeInfo) {
			n := ni.Node.DeepCopy()
			n.Labels["pool"] = "web"
			ni.SetNode(n)
		}, key: p2g2, want: false},
		{name: "key 0: never remembered", change: func(ni *NodeInfo) { ni.Node.Labels["pool"] = "batch" }, key: 0, want: true},
		{name: "key 0, changed labels", change: func(ni *NodeInfo) { ni.Node.Labels["pool"] = "web" }, key: 0, want: false},
	}
	ni := NewNodeInfo(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"pool": "batch"}}})
	for _, s := range steps {
		if s.change != nil {
			s.change(ni)
		}
		if got := ni.MatchesPolicy(s.key, sel); got != s.want {
			t.Errorf("%s: MatchesPolicy = %v, want %v", s.name, got, s.want)
		}
	}
	if c := ni.Clone(); c.Node != ni.Node || c.policyMatch.Load() != 0 {
		t.Errorf("Clone: want the same node and no remembered answer")
	}
}

// TestKeyOf: one key per policy generation, stable across calls; none for
// objects without a uid.
func TestKeyOf(t *testing.T) {
	a, b, c := KeyOf("uid-a", 1), KeyOf("uid-a", 2), KeyOf("uid-b", 1)
	if a == 0 || b == 0 || c == 0 || a == b || a == c || b == c {
		t.Errorf("keys of distinct generations: %d %d %d, want distinct and non-zero", a, b, c)
	}
	if again := KeyOf("uid-a", 1); again != a {
		t.Errorf("KeyOf(uid-a, 1) = %d, then %d", a, again)
	}
	if k := KeyOf("", 1); k != 0 {
		t.Errorf("KeyOf without uid = %d, want 0", k)
	}
}

// TestSetNode: what the filters read without loading the Node object
// follows every node update, and Clone keeps it.
func TestSetNode(t *testing.T) {
	taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	node := func(unschedulable bool, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n"},
			Spec:       corev1.NodeSpec{Unschedulable: unschedulable, Taints: taints},
			Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
		}
	}
	type derived struct {
		Unschedulable bool
		Taints        []corev1.Taint
		MilliCPU      int64
		RequestedCPU  int64
	}
	get := func(ni *NodeInfo) derived {
		return derived{ni.Unschedulable, ni.Taints, ni.Allocatable.MilliCPU, ni.Requested.MilliCPU}
	}
	ni := NewNodeInfo(node(false))
	ni.AddPod(&Resource{MilliCPU: 500}, 500, 0, 1)
	if diff := cmp.Diff(derived{MilliCPU: 2000, RequestedCPU: 500}, get(ni)); diff != "" {
		t.Errorf("NewNodeInfo (-want +got):\n%s", diff)
	}
	updated := node(true, taint)
	updated.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("4")
	ni.SetNode(updated)
	want := derived{Unschedulable: true, Taints: []corev1.Taint{taint}, MilliCPU: 4000, RequestedCPU: 500}
	if diff := cmp.Diff(want, get(ni)); diff != "" {
		t.Errorf("after SetNode (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, get(ni.Clone())); diff != "" {
		t.Errorf("Clone (-want +got):\n%s", diff)
	}
}
