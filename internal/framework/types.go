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
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Default requests used for scoring pods that request nothing, as
// kube-scheduler does (schedutil.DefaultMilliCPURequest/DefaultMemoryRequest).
const (
	DefaultMilliCPURequest int64 = 100
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024
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

// NonZeroPodRequests are the requests used for scoring: a container that
// requests no cpu or memory counts as 100m / 200Mi, as in kube-scheduler.
func NonZeroPodRequests(pod *corev1.Pod) (milliCPU, memory int64) {
	rl := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{
		NonMissingContainerRequests: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(DefaultMilliCPURequest, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(DefaultMemoryRequest, resource.DecimalSI),
		},
	})
	return rl.Cpu().MilliValue(), rl.Memory().Value()
}

// NodeInfo is a node with the capacity already taken on it: the requests of
// every non-terminal pod bound there and of every reservation held there.
type NodeInfo struct {
	Node *corev1.Node
	// Unschedulable and Taints are Node's spec.unschedulable and
	// spec.taints, copied by NewNodeInfo and SetNode: the filters that read
	// them on every node of a walk stay within the NodeInfo instead of
	// loading each Node object (a cache miss per node on large clusters).
	Unschedulable bool
	Taints        []corev1.Taint
	// Allocatable and Requested are values, not pointers, so a node walk
	// reads one NodeInfo object per node rather than three.
	Allocatable Resource
	// Requested sums the requests of pods and reservations on the node.
	Requested Resource
	// NonZeroMilliCPU and NonZeroMemory sum the scoring requests.
	NonZeroMilliCPU int64
	NonZeroMemory   int64
	// PodCount counts pods and reservations.
	PodCount int64

	// policyMatch remembers whether Node matched the nodeSelector of the
	// last policy generation asked (MatchesPolicy): the PolicyKey shifted
	// left by one, or-ed with the answer; 0 when nothing is remembered.
	// It lives in the NodeInfo itself (not behind a pointer) so a node walk
	// loads no other object for it.
	policyMatch atomic.Uint64
}

// PolicyKey names one generation of one policy for MatchesPolicy; 0 names
// none.
type PolicyKey uint64

type policyGeneration struct {
	uid        types.UID
	generation int64
}

var (
	policyKeys    sync.Map // policyGeneration -> PolicyKey
	lastPolicyKey atomic.Uint64
)

// KeyOf returns the key of a policy's generation, the same for every call
// with the same uid and generation (a few bytes are kept per generation
// ever seen). An empty uid (an object not from the API server) has key 0.
func KeyOf(uid types.UID, generation int64) PolicyKey {
	if uid == "" {
		return 0
	}
	k := policyGeneration{uid: uid, generation: generation}
	if v, ok := policyKeys.Load(k); ok {
		return v.(PolicyKey)
	}
	v, _ := policyKeys.LoadOrStore(k, PolicyKey(lastPolicyKey.Add(1)))
	return v.(PolicyKey)
}

// MatchesPolicy says whether the node's labels match sel, the parsed
// spec.nodeSelector of the policy generation key names. The answer is
// remembered until SetNode replaces the node object or another generation
// is asked, so the cycles of one policy's pods do not match labels on every
// node again (it is a tenth of a cycle's CPU on thousands of nodes). Key 0
// is never remembered. Callers hold the node cache's lock, at least for
// reading; concurrent callers are safe.
func (ni *NodeInfo) MatchesPolicy(key PolicyKey, sel labels.Selector) bool {
	if key == 0 {
		return sel.Matches(labels.Set(ni.Node.Labels))
	}
	if m := ni.policyMatch.Load(); m>>1 == uint64(key) {
		return m&1 == 1
	}
	ok := sel.Matches(labels.Set(ni.Node.Labels))
	m := uint64(key) << 1
	if ok {
		m |= 1
	}
	ni.policyMatch.Store(m)
	return ok
}

// NewNodeInfo makes an empty NodeInfo for node.
func NewNodeInfo(node *corev1.Node) *NodeInfo {
	ni := &NodeInfo{}
	ni.SetNode(node)
	return ni
}

// SetNode replaces the node object (an update from the API server) and what
// is derived from it; the pods and reservations counted stay.
func (ni *NodeInfo) SetNode(node *corev1.Node) {
	ni.Node = node
	ni.policyMatch.Store(0)
	ni.Allocatable = *NewResource(node.Status.Allocatable)
	ni.Unschedulable = node.Spec.Unschedulable
	ni.Taints = node.Spec.Taints
}

// Clone copies ni (the Node object is shared: it is read-only).
func (ni *NodeInfo) Clone() *NodeInfo {
	return &NodeInfo{
		Node: ni.Node, Unschedulable: ni.Unschedulable, Taints: ni.Taints,
		Allocatable: *ni.Allocatable.Clone(), Requested: *ni.Requested.Clone(),
		NonZeroMilliCPU: ni.NonZeroMilliCPU, NonZeroMemory: ni.NonZeroMemory, PodCount: ni.PodCount,
	}
}

// AddPod accounts a pod's requests on the node (sign +1) or removes them (-1).
func (ni *NodeInfo) AddPod(req *Resource, nonZeroCPU, nonZeroMem int64, sign int64) {
	ni.Requested.AddResource(req, sign)
	ni.NonZeroMilliCPU += sign * nonZeroCPU
	ni.NonZeroMemory += sign * nonZeroMem
	ni.PodCount += sign
}
