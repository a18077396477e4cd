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

package noderesources_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/noderesources"
)

// pod builds a pod with one container per request list.
func pod(containers ...corev1.ResourceList) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	for _, rl := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Resources: corev1.ResourceRequirements{Requests: rl}})
	}
	return p
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func nodeInfo(alloc corev1.ResourceList, existing ...*corev1.Pod) *framework.NodeInfo {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: alloc}}
	ni := framework.NewNodeInfo(n)
	for _, p := range existing {
		cpu, mem := framework.NonZeroPodRequests(p)
		ni.AddPod(framework.PodRequests(p), cpu, mem, 1)
	}
	return ni
}

// The expected scores are the ones in kube-scheduler v1.37.2's own tests
// (pkg/scheduler/framework/plugins/noderesources/*_test.go) for the same
// inputs, so a change of formula shows up here.
func TestScoreMatchesKubeScheduler(t *testing.T) {
	requested := pod(rl("cpu", "1000m", "memory", "2000"), rl("cpu", "2000m", "memory", "3000"))
	type node struct {
		alloc    corev1.ResourceList
		existing []*corev1.Pod
	}
	cases := map[string]struct {
		strategy bindgatev1alpha1.ScoringStrategyType
		pod      *corev1.Pod
		nodes    []node
		want     []int64
	}{
		"LeastAllocated: nothing scheduled, differently sized nodes": {
			strategy: bindgatev1alpha1.LeastAllocated,
			pod:      requested,
			nodes:    []node{{alloc: rl("cpu", "4000m", "memory", "10000")}, {alloc: rl("cpu", "6000m", "memory", "10000")}},
			want:     []int64{37, 50},
		},
		"LeastAllocated: pods scheduled with resources": {
			strategy: bindgatev1alpha1.LeastAllocated,
			pod:      requested,
			nodes: []node{
				{alloc: rl("cpu", "10000m", "memory", "20000"), existing: []*corev1.Pod{pod(rl("cpu", "3000m", "memory", "0"))}},
				{alloc: rl("cpu", "10000m", "memory", "20000"), existing: []*corev1.Pod{pod(rl("cpu", "3000m", "memory", "5000"))}},
			},
			want: []int64{57, 45},
		},
		"LeastAllocated: pods scheduled, differently sized nodes": {
			strategy: bindgatev1alpha1.LeastAllocated,
			pod:      requested,
			nodes: []node{
				{alloc: rl("cpu", "10000m", "memory", "20000"), existing: []*corev1.Pod{pod(rl("cpu", "3000m", "memory", "0"))}},
				{alloc: rl("cpu", "10000m", "memory", "50000"), existing: []*corev1.Pod{pod(rl("cpu", "3000m", "memory", "5000"))}},
			},
			want: []int64{57, 60},
		},
		"MostAllocated: pods scheduled with resources": {
			strategy: bindgatev1alpha1.MostAllocated,
			pod:      requested,
			nodes: []node{
				{alloc: rl("cpu", "10000m", "memory", "20000"), existing: []*corev1.Pod{pod(rl("cpu", "3000m", "memory", "0"))}},
				{alloc: rl("cpu", "10000m", "memory", "20000"), existing: []*corev1.Pod{pod(rl("cpu", "3000m", "memory", "5000"))}},
			},
			want: []int64{42, 55},
		},
		"MostAllocated: requested above capacity is capped": {
			strategy: bindgatev1alpha1.MostAllocated,
			pod:      pod(rl("cpu", "5000m", "memory", "9000")),
			nodes:    []node{{alloc: rl("cpu", "4000m", "memory", "10000")}},
			want:     []int64{95},
		},
		"BalancedAllocation: nothing scheduled, differently sized nodes": {
			strategy: bindgatev1alpha1.BalancedAllocation,
			pod:      requested,
			nodes:    []node{{alloc: rl("cpu", "4000m", "memory", "10000")}, {alloc: rl("cpu", "6000m", "memory", "10000")}},
			want:     []int64{68, 75},
		},
		"BalancedAllocation: pods scheduled with resources": {
			strategy: bindgatev1alpha1.BalancedAllocation,
			pod:      requested,
			nodes: []node{
				{alloc: rl("cpu", "10000m", "memory", "20000"), existing: []*corev1.Pod{pod(rl("cpu", "1000m"), rl("cpu", "2000m"))}},
				{alloc: rl("cpu", "10000m", "memory", "20000"), existing: []*corev1.Pod{pod(rl("cpu", "1000m", "memory", "2000"), rl("cpu", "2000m", "memory", "3000"))}},
			},
			want: []int64{73, 74},
		},
		"BalancedAllocation: differently sized nodes": {
			strategy: bindgatev1alpha1.BalancedAllocation,
			pod:      requested,
			nodes: []node{
				{alloc: rl("cpu", "10000m", "memory", "20000"), existing: []*corev1.Pod{pod(rl("cpu", "1000m"), rl("cpu", "2000m"))}},
				{alloc: rl("cpu", "10000m", "memory", "50000"), existing: []*corev1.Pod{pod(rl("cpu", "1000m", "memory", "2000"), rl("cpu", "2000m", "memory", "3000"))}},
			},
			want: []int64{73, 70},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := noderesources.Scorer{Strategy: tc.strategy}
			state := framework.NewCycleState(nil, tc.pod)
			var got []int64
			for _, n := range tc.nodes {
				score, st := s.Score(context.Background(), state, tc.pod, nodeInfo(n.alloc, n.existing...))
				if st != nil {
					t.Fatalf("status: %v", st)
				}
				got = append(got, score)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFits(t *testing.T) {
	alloc := rl("cpu", "4", "memory", "8Gi", "ephemeral-storage", "10Gi", "pods", "3", "nvidia.com/gpu", "2")
	cases := map[string]struct {
		pod      *corev1.Pod
		existing []*corev1.Pod
		want     []string
	}{
		"fits":             {pod: pod(rl("cpu", "1", "memory", "1Gi")), want: nil},
		"insufficient cpu": {pod: pod(rl("cpu", "5")), want: []string{"Insufficient cpu"}},
		"insufficient cpu and memory": {
			pod: pod(rl("cpu", "3", "memory", "4Gi")), existing: []*corev1.Pod{pod(rl("cpu", "2", "memory", "6Gi"))},
			want: []string{"Insufficient cpu", "Insufficient memory"},
		},
		"insufficient ephemeral-storage": {pod: pod(rl("ephemeral-storage", "11Gi")), want: []string{"Insufficient ephemeral-storage"}},
		"insufficient extended resource": {pod: pod(rl("nvidia.com/gpu", "3")), want: []string{"Insufficient nvidia.com/gpu"}},
		"unknown extended resource":      {pod: pod(rl("example.com/fpga", "1")), want: []string{"Insufficient example.com/fpga"}},
		"too many pods, even requesting nothing": {
			pod: pod(corev1.ResourceList{}), existing: []*corev1.Pod{pod(nil), pod(nil), pod(nil)},
			want: []string{"Too many pods"},
		},
		"init container larger than containers counts (max of init, sum)": {
			pod: func() *corev1.Pod {
				p := pod(rl("cpu", "1"))
				p.Spec.InitContainers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: rl("cpu", "5")}}}
				return p
			}(),
			want: []string{"Insufficient cpu"},
		},
		"pod overhead counts": {
			pod: func() *corev1.Pod {
				p := pod(rl("cpu", "3500m"))
				p.Spec.Overhead = rl("cpu", "600m")
				return p
			}(),
			want: []string{"Insufficient cpu"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, r := range noderesources.Fits(framework.PodRequests(tc.pod), nodeInfo(alloc, tc.existing...)) {
				got = append(got, r.Reason)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}
