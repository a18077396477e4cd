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

// Package noderesources holds the resource fit check and the scoring
// strategies, with kube-scheduler's formulas (NodeResourcesFit and
// NodeResourcesBalancedAllocation).
package noderesources

import (
	"context"
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
)

// Name is the plugin name.
const Name = "NodeResourcesFit"

// InsufficientResource is one reason a pod does not fit.
type InsufficientResource struct {
	ResourceName corev1.ResourceName
	Reason       string
	Requested    int64
	Used         int64
	Capacity     int64
}

// Fits returns the resources the node lacks for req ("Too many pods",
// "Insufficient cpu", ...), as kube-scheduler's fitsRequest does.
func Fits(req *framework.Resource, ni *framework.NodeInfo) []InsufficientResource {
	var out []InsufficientResource
	if ni.PodCount+1 > ni.Allocatable.AllowedPodNumber {
		out = append(out, InsufficientResource{corev1.ResourcePods, "Too many pods", 1, ni.PodCount, ni.Allocatable.AllowedPodNumber})
	}
	if req.IsZero() {
		return out
	}
	check := func(name corev1.ResourceName, want, alloc, used int64) {
		if want > 0 && want > alloc-used {
			out = append(out, InsufficientResource{name, fmt.Sprintf("Insufficient %s", name), want, used, alloc})
		}
	}
	check(corev1.ResourceCPU, req.MilliCPU, ni.Allocatable.MilliCPU, ni.Requested.MilliCPU)
	check(corev1.ResourceMemory, req.Memory, ni.Allocatable.Memory, ni.Requested.Memory)
	check(corev1.ResourceEphemeralStorage, req.EphemeralStorage, ni.Allocatable.EphemeralStorage, ni.Requested.EphemeralStorage)
	names := make([]corev1.ResourceName, 0, len(req.Scalar))
	for n := range req.Scalar {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	for _, n := range names {
		check(n, req.Scalar[n], ni.Allocatable.Scalar[n], ni.Requested.Scalar[n])
	}
	return out
}

// Fit is the resource fit Filter plugin.
type Fit struct{}

var _ framework.FilterPlugin = Fit{}

// Name implements framework.Plugin.
func (Fit) Name() string { return Name }

// Filter implements framework.FilterPlugin.
func (Fit) Filter(_ context.Context, state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	insufficient := Fits(state.PodRequests, ni)
	if len(insufficient) == 0 {
		return nil
	}
	reasons := make([]string, 0, len(insufficient))
	for _, r := range insufficient {
		reasons = append(reasons, r.Reason)
	}
	return framework.NewStatus(framework.Unschedulable, reasons...)
}

// resourceScore is the per-resource vector scoring works on: cpu and memory
// with weight 1 each (kube-scheduler's defaults). Fixed-size arrays keep it
// on the stack: Score runs for hundreds of nodes per cycle.
type resourceScore struct {
	requested, allocated, allocatable [2]int64
}

func vectors(_ *corev1.Pod, state *framework.CycleState, ni *framework.NodeInfo, useRequested bool) resourceScore {
	var podCPU, podMem int64
	nodeCPU, nodeMem := ni.NonZeroMilliCPU, ni.NonZeroMemory
	if useRequested {
		podCPU, podMem = state.PodRequests.MilliCPU, state.PodRequests.Memory
		nodeCPU, nodeMem = ni.Requested.MilliCPU, ni.Requested.Memory
	} else {
		podCPU, podMem = state.NonZeroMilliCPU, state.NonZeroMemory
	}
	v := resourceScore{
		allocatable: [2]int64{ni.Allocatable.MilliCPU, ni.Allocatable.Memory},
		allocated:   [2]int64{nodeCPU, nodeMem},
		requested:   [2]int64{nodeCPU + podCPU, nodeMem + podMem},
	}
	for i := range v.allocatable {
		if v.allocatable[i] == 0 {
			v.requested[i], v.allocated[i] = 0, 0
		}
	}
	return v
}

// LeastAllocatedScore is kube-scheduler's leastResourceScorer with weight 1
// per resource.
func LeastAllocatedScore(requested, allocatable []int64) int64 {
	var score, weights int64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		if requested[i] <= allocatable[i] {
			score += (allocatable[i] - requested[i]) * framework.MaxNodeScore / allocatable[i]
		}
		weights++
	}
	if weights == 0 {
		return 0
	}
	return score / weights
}

// MostAllocatedScore is kube-scheduler's mostResourceScorer with weight 1
// per resource.
func MostAllocatedScore(requested, allocatable []int64) int64 {
	var score, weights int64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		r := min(requested[i], allocatable[i])
		score += r * framework.MaxNodeScore / allocatable[i]
		weights++
	}
	if weights == 0 {
		return 0
	}
	return score / weights
}

func balancedResourceScore(requested, allocatable []int64) int64 {
	var fractions []float64
	var total float64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		f := math.Min(float64(requested[i])/float64(allocatable[i]), 1)
		total += f
		fractions = append(fractions, f)
	}
	std := 0.0
	switch {
	case len(fractions) == 2:
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	case len(fractions) > 2:
		mean := total / float64(len(fractions))
		var sum float64
		for _, f := range fractions {
			sum += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sum / float64(len(fractions)))
	}
	return int64((1 - std) * float64(framework.MaxNodeScore))
}

// BalancedAllocationScore is kube-scheduler's balancedResourceScorer: the
// balance with the pod, compared with the balance without it.
func BalancedAllocationScore(requested, allocated, allocatable []int64) int64 {
	with := balancedResourceScore(requested, allocatable)
	without := balancedResourceScore(allocated, allocatable)
	return framework.MaxNodeScore/2 + (framework.MaxNodeScore/2+with-without)/2
}

// Scorer is the Score plugin for one strategy.
type Scorer struct {
	Strategy bindgatev1alpha1.ScoringStrategyType
}

var _ framework.ScorePlugin = Scorer{}

// Name implements framework.Plugin.
func (s Scorer) Name() string { return string(s.Strategy) }

// Score implements framework.ScorePlugin.
func (s Scorer) Score(_ context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	switch s.Strategy {
	case bindgatev1alpha1.MostAllocated:
		v := vectors(pod, state, ni, false)
		return MostAllocatedScore(v.requested[:], v.allocatable[:]), nil
	case bindgatev1alpha1.BalancedAllocation:
		v := vectors(pod, state, ni, true)
		return BalancedAllocationScore(v.requested[:], v.allocated[:], v.allocatable[:]), nil
	default:
		v := vectors(pod, state, ni, false)
		return LeastAllocatedScore(v.requested[:], v.allocatable[:]), nil
	}
}
