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
	"k8s.io/apimachinery/pkg/types"
)

// TestMatchesPolicy: the answer is remembered per policy generation and
// node object, and asked again when either changes. Labels are changed in
// place below only to tell a remembered answer from a fresh one (the cache
// replaces the node object on every update).
func TestMatchesPolicy(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"pool": "batch"})
	steps := []struct {
		name       string
		change     func(ni *NodeInfo)
		uid        types.UID
		generation int64
		want       bool
	}{
		{name: "first answer", uid: "p1", generation: 1, want: true},
		{name: "remembered for the same generation", change: func(ni *NodeInfo) { ni.Node.Labels["pool"] = "web" }, uid: "p1", generation: 1, want: true},
		{name: "asked again for a new generation", uid: "p1", generation: 2, want: false},
		{name: "asked again for another policy", change: func(ni *NodeInfo) { ni.Node.Labels["pool"] = "batch" }, uid: "p2", generation: 2, want: true},
		{name: "asked again for a new node object", change: func(ni *NodeInfo) {
			n := ni.Node.DeepCopy()
			n.Labels["pool"] = "web"
			ni.Node = n
		}, uid: "p2", generation: 2, want: false},
		{name: "no uid: never remembered", change: func(ni *NodeInfo) { ni.Node.Labels["pool"] = "batch" }, uid: "", generation: 0, want: true},
		{name: "no uid, changed labels", change: func(ni *NodeInfo) { ni.Node.Labels["pool"] = "web" }, uid: "", generation: 0, want: false},
	}
	ni := NewNodeInfo(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"pool": "batch"}}})
	for _, s := range steps {
		if s.change != nil {
			s.change(ni)
		}
		if got := ni.MatchesPolicy(s.uid, s.generation, sel); got != s.want {
			t.Errorf("%s: MatchesPolicy = %v, want %v", s.name, got, s.want)
		}
	}
	if c := ni.Clone(); c.Node != ni.Node || c.policyMatch.Load() != nil {
		t.Errorf("Clone: want the same node and no remembered answer")
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
