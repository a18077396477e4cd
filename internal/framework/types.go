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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Resource is a vector of resources in the units kube-scheduler uses:
// millicores for cpu, bytes for memory and storage, counts otherwise.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is set for allocatable only.
	AllowedPodNumber int64
	Scalar           map[corev1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl corev1.ResourceList) *Resource {
	r := &Resource{}
	r.Add(rl)
	return r
}

// Add adds a ResourceList.
func (r *Resource) Add(rl corev1.ResourceList) {
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case corev1.ResourceMemory:
			r.Memory += q.Value()
		case corev1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case corev1.ResourcePods:
			r.AllowedPodNumber += q.Value()
		default:
			if IsScalarResourceName(name) {
				if r.Scalar == nil {
					r.Scalar = map[corev1.ResourceName]int64{}
				}
				r.Scalar[name] += q.Value()
			}
		}
	}
}

// AddResource adds o to r.
func (r *Resource) AddResource(o *Resource, sign int64) {
	if o == nil {
		return
	}
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	r.AllowedPodNumber += sign * o.AllowedPodNumber
	for k, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[corev1.ResourceName]int64{}
		}
		r.Scalar[k] += sign * v
		if r.Scalar[k] == 0 {
			delete(r.Scalar, k)
		}
	}
}

// IsZero says whether nothing is requested.
func (r *Resource) IsZero() bool {
	if r.MilliCPU != 0 || r.Memory != 0 || r.EphemeralStorage != 0 {
		return false
	}
	for _, v := range r.Scalar {
		if v != 0 {
			return false
		}
	}
	return true
}

// Clone copies r.
func (r *Resource) Clone() *Resource {
	c := *r
	c.Scalar = nil
	for k, v := range r.Scalar {
		if c.Scalar == nil {
			c.Scalar = make(map[corev1.ResourceName]int64, len(r.Scalar))
		}
		c.Scalar[k] = v
	}
	return &c
}

// ResourceList converts back to a ResourceList.
func (r *Resource) ResourceList() corev1.ResourceList {
	rl := corev1.ResourceList{}
	if r.MilliCPU != 0 {
		rl[corev1.ResourceCPU] = *resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI)
	}
	if r.Memory != 0 {
		rl[corev1.ResourceMemory] = *resource.NewQuantity(r.Memory, resource.BinarySI)
	}
	if r.EphemeralStorage != 0 {
		rl[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(r.EphemeralStorage, resource.BinarySI)
	}
	for k, v := range r.Scalar {
		rl[k] = *resource.NewQuantity(v, resource.DecimalSI)
	}
	return rl
}

// IsScalarResourceName says whether a resource is tracked as a scalar:
// extended resources (e.g. nvidia.com/gpu), hugepages and attachable volumes.
func IsScalarResourceName(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods, corev1.ResourceStorage:
		return false
	}
	return true
}

// PodRequests are a pod's effective requests (init containers, sidecars,
// overhead and pod-level resources included), computed by
// k8s.io/component-helpers exactly as kube-scheduler's fit check does.
func PodRequests(pod *corev1.Pod) *Resource {
	return NewResource(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
}
