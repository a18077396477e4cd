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

	corev1 "k8s.io/api/core/v1"
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
