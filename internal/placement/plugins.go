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

package placement

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/framework"
)

// Names of bindgate's own plugins, run in the same framework as
// kube-scheduler's.
const (
	// PolicyNodeSelectorName filters out the nodes outside the policy's
	// spec.nodeSelector.
	PolicyNodeSelectorName = "BindingPolicyNodeSelector"
	// PolicyCapacityName refuses a pod that would take its policy past
	// spec.capacity.
	PolicyCapacityName = "BindingPolicyCapacity"
	// UnsupportedName refuses what bindgate cannot place correctly.
	UnsupportedName = "BindgateUnsupported"
)

// Reasons of bindgate's plugins, in kube-scheduler's wording style.
const (
	ErrReasonPolicyNodeSelector = "node(s) didn't match policy nodeSelector"
	// ErrReasonOutsideDomain is the reason a node outside the topology
	// domain a gang is being placed in is not considered.
	ErrReasonOutsideDomain = "node(s) outside the gang's topology domain"
	// ErrReasonDRA is the reason a pod with resourceClaims is refused
	// while bindgate does not allocate devices: its replicas may run side
	// by side (--leader-elect=false), and devices held by one replica's
	// reservations are not visible to another.
	ErrReasonDRA = "pod uses dynamic resource allocation (spec.resourceClaims), which bindgate allocates only as the single active replica (--leader-elect=true); schedule it with kube-scheduler"
	// ErrReasonDRAForbidden is the reason a pod with resourceClaims is
	// refused when the operator may not do what DRA needs.
	ErrReasonDRAForbidden = "pod uses dynamic resource allocation (spec.resourceClaims), and the operator's RBAC does not allow reading resource.k8s.io/v1 resourceclaims, resourceslices and deviceclasses and writing claims' status (checked when the operator started: restart it once that is granted)"
	// ErrReasonDRANotServed is the reason a pod with resourceClaims is
	// refused when the API server does not serve resource.k8s.io/v1.
	ErrReasonDRANotServed = "pod uses dynamic resource allocation (spec.resourceClaims), and the API server does not serve resource.k8s.io/v1 resourceclaims, resourceslices and deviceclasses (checked when the operator started: restart it once they are served)"
)

// policyStateKey holds the policy of the pod's cycle in the CycleState.
const policyStateKey fwk.StateKey = "bindgate.dev/BindingPolicy"

type policyState struct {
	policy *bindgatev1alpha1.BindingPolicy
}

// Clone shares the state: it is read-only.
func (s *policyState) Clone() fwk.StateData { return s }

// writePolicy puts the cycle's policy where bindgate's plugins find it.
func writePolicy(state fwk.CycleState, policy *bindgatev1alpha1.BindingPolicy) {
	state.Write(policyStateKey, &policyState{policy: policy})
}

func readPolicy(state fwk.CycleState) (*bindgatev1alpha1.BindingPolicy, *fwk.Status) {
	v, err := state.Read(policyStateKey)
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("reading the cycle's BindingPolicy: %w", err))
	}
	return v.(*policyState).policy, nil
}

// policyNodeSelector is the policy's spec.nodeSelector as a Filter plugin.
type policyNodeSelector struct{ memo *selectorMemo }

var (
	_ fwk.PreFilterPlugin = policyNodeSelector{}
	_ fwk.FilterPlugin    = policyNodeSelector{}
)

const selectorStateKey fwk.StateKey = "bindgate.dev/" + PolicyNodeSelectorName

type selectorState struct{ sel labels.Selector }

func (s *selectorState) Clone() fwk.StateData { return s }

func (policyNodeSelector) Name() string { return PolicyNodeSelectorName }

// PreFilter parses the selector once per cycle. Skip: no selector, or one
// that selects every node (a policy over the whole cluster, or over a pool
// every node is in): matching it against each node of every cycle cost more
// CPU than all of kube-scheduler's Filter plugins together on such a
// cluster.
func (p policyNodeSelector) PreFilter(_ context.Context, state fwk.CycleState, _ *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	policy, st := readPolicy(state)
	if st != nil {
		return nil, st
	}
	if policy.Spec.NodeSelector == nil {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	sel, err := metav1.LabelSelectorAsSelector(policy.Spec.NodeSelector)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("policy %s has an invalid spec.nodeSelector: %v", policy.Name, err))
	}
	if sel.Empty() || p.memo.selectsAll(sel, nodes) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	state.Write(selectorStateKey, &selectorState{sel: sel})
	return nil, nil
}

func (policyNodeSelector) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter keeps the nodes the selector selects.
func (policyNodeSelector) Filter(_ context.Context, state fwk.CycleState, _ *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	v, err := state.Read(selectorStateKey)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if !v.(*selectorState).sel.Matches(labels.Set(ni.Node().Labels)) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ErrReasonPolicyNodeSelector)
	}
	return nil
}

// policyCapacity is the policy's spec.capacity budget. It runs last among
// the Filter plugins, so its refusal counts only the nodes that every other
// plugin accepted.
type policyCapacity struct{ cache *cache.Cache }

var (
	_ fwk.PreFilterPlugin = policyCapacity{}
	_ fwk.FilterPlugin    = policyCapacity{}
)

const capacityStateKey fwk.StateKey = "bindgate.dev/" + PolicyCapacityName

type capacityState struct{ reasons []string }

func (s *capacityState) Clone() fwk.StateData { return s }

func (policyCapacity) Name() string { return PolicyCapacityName }

// PreFilter checks the budget once per cycle (Skip: within budget).
func (p policyCapacity) PreFilter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	policy, st := readPolicy(state)
	if st != nil {
		return nil, st
	}
	if len(policy.Spec.Capacity) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	reasons := p.cache.ExceedsBudget(policy, framework.PodRequests(pod))
	if len(reasons) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	state.Write(capacityStateKey, &capacityState{reasons: reasons})
	return nil, nil
}

func (policyCapacity) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter refuses every node that reaches it: the policy is out of budget.
func (policyCapacity) Filter(_ context.Context, state fwk.CycleState, _ *corev1.Pod, _ fwk.NodeInfo) *fwk.Status {
	v, err := state.Read(capacityStateKey)
	if err != nil {
		return fwk.AsStatus(err)
	}
	return fwk.NewStatus(fwk.Unschedulable, v.(*capacityState).reasons...)
}

// unsupported refuses, with a reason, the pods bindgate cannot place
// correctly: those that need dynamic resource allocation while the
// DynamicResources plugin is not in the profile (draRefusal says why):
// pods with resourceClaims, and, on the nodes that do not advertise it,
// pods asking for an extended resource a DeviceClass backs (classes, when
// the operator reads DeviceClasses without DRA; nil otherwise, and such a
// pod then finds the resource on no node, as with kube-scheduler without
// DRA).
type unsupported struct {
	draRefusal string
	classes    deviceClassResolver
}

// deviceClassResolver maps an extended resource to the DeviceClass that
// backs it (extendedresourcecache.ExtendedResourceCache).
type deviceClassResolver interface {
	GetDeviceClass(corev1.ResourceName) *resourcev1.DeviceClass
}

const unsupportedStateKey fwk.StateKey = "bindgate.dev/" + UnsupportedName

// draBacked lists the extended resources of the pod that a DeviceClass
// backs.
type draBacked struct{ names []corev1.ResourceName }

func (s *draBacked) Clone() fwk.StateData { return s }

var (
	_ fwk.PreFilterPlugin = unsupported{}
	_ fwk.FilterPlugin    = unsupported{}
)

func (unsupported) Name() string { return UnsupportedName }

// PreFilter refuses a pod with resourceClaims while bindgate does not
// allocate devices (Skip otherwise).
func (u unsupported) PreFilter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if u.draRefusal == "" {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, u.draRefusal)
	}
	if u.classes == nil || !requestsExtended(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	var backed []corev1.ResourceName
	for name := range framework.PodRequests(pod).Scalar {
		if v1helper.IsExtendedResourceName(name) && u.classes.GetDeviceClass(name) != nil {
			backed = append(backed, name)
		}
	}
	if len(backed) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	slices.Sort(backed)
	state.Write(unsupportedStateKey, &draBacked{names: backed})
	return nil, nil
}

func (unsupported) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// requestsExtended says whether any list framework.PodRequests reads
// (containers', init containers' and pod-level requests, and the overhead)
// names an extended resource: most pods name none, and then PreFilter
// skips without summing the requests. It never misses one the sum holds;
// pod-level requests, whose extended resources the sum leaves out, can
// only make it look closer.
func requestsExtended(pod *corev1.Pod) bool {
	names := func(rl corev1.ResourceList) bool {
		for name := range rl {
			if v1helper.IsExtendedResourceName(name) {
				return true
			}
		}
		return false
	}
	for i := range pod.Spec.Containers {
		if names(pod.Spec.Containers[i].Resources.Requests) {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if names(pod.Spec.InitContainers[i].Resources.Requests) {
			return true
		}
	}
	if pod.Spec.Resources != nil && names(pod.Spec.Resources.Requests) {
		return true
	}
	return names(pod.Spec.Overhead)
}

// Filter refuses a node that does not advertise an extended resource of
// the pod that a DeviceClass backs: there only DRA could give it (a node
// that advertises it serves it with a device plugin, as kube-scheduler
// decides in NodeResourcesFit).
func (u unsupported) Filter(_ context.Context, state fwk.CycleState, _ *corev1.Pod, node fwk.NodeInfo) *fwk.Status {
	v, err := state.Read(unsupportedStateKey)
	if err != nil {
		return fwk.AsStatus(err)
	}
	alloc := node.GetAllocatable().GetScalarResources()
	for _, name := range v.(*draBacked).names {
		if alloc[name] == 0 {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ErrReasonDRAExtendedResource(name, u.draRefusal))
		}
	}
	return nil
}

// ErrReasonDRAExtendedResource is the reason a node is refused to a pod
// that asks for resource, which a DeviceClass backs and the node does not
// advertise, while bindgate does not allocate devices (refusal says why).
func ErrReasonDRAExtendedResource(resource corev1.ResourceName, refusal string) string {
	why := strings.TrimPrefix(refusal, "pod uses dynamic resource allocation (spec.resourceClaims)")
	return fmt.Sprintf("node has no %s but by dynamic resource allocation (a DeviceClass backs it)%s", resource, why)
}

// registry lists bindgate's plugins for the framework runtime.
func registry(c *cache.Cache, selectors *selectorMemo, draRefusal string, classes deviceClassResolver) map[string]func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return map[string]func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error){
		PolicyNodeSelectorName: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return policyNodeSelector{memo: selectors}, nil
		},
		PolicyCapacityName: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return policyCapacity{cache: c}, nil
		},
		UnsupportedName: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return unsupported{draRefusal: draRefusal, classes: classes}, nil
		},
	}
}
