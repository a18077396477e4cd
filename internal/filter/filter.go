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

// Package filter holds the node Filter plugins other than resource fit: the
// policy's nodeSelector, the pod's own node selector and required affinity,
// taints and cordoned nodes. Node affinity and taints are evaluated by
// k8s.io/component-helpers so that results match kube-scheduler.
package filter

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/bindgate/bindgate/internal/framework"
)

// enableComparisonOperators follows kube-scheduler v1.37's default for the
// alpha TaintTolerationComparisonOperators feature gate (off).
const enableComparisonOperators = false

// Reasons, worded as kube-scheduler words them in FailedScheduling events.
const (
	ReasonPolicyNodeSelector = "node(s) didn't match policy nodeSelector"
	ReasonNodeAffinity       = "node(s) didn't match Pod's node affinity/selector"
	ReasonUnschedulable      = "node(s) were unschedulable"
)

// PolicyNodeSelector keeps the nodes the policy's nodeSelector selects.
type PolicyNodeSelector struct{}

// Name implements framework.Plugin.
func (PolicyNodeSelector) Name() string { return "PolicyNodeSelector" }

// Filter implements framework.FilterPlugin.
func (PolicyNodeSelector) Filter(_ context.Context, state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	if state.PolicyNodeSelectorErr != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("invalid policy nodeSelector: %v", state.PolicyNodeSelectorErr))
	}
	if state.PolicyNodeSelector == nil {
		return nil
	}
	if !ni.MatchesPolicy(state.PolicyKey, state.PolicyNodeSelector) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonPolicyNodeSelector)
	}
	return nil
}

// NodeAffinity keeps the nodes the pod's nodeSelector and required node
// affinity allow.
type NodeAffinity struct{}

// Name implements framework.Plugin.
func (NodeAffinity) Name() string { return "NodeAffinity" }

// Filter implements framework.FilterPlugin.
func (NodeAffinity) Filter(_ context.Context, state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	ok, err := state.RequiredNodeAffinity.Match(ni.Node)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("evaluating node affinity: %w", err))
	}
	if !ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonNodeAffinity)
	}
	return nil
}

// TaintToleration keeps the nodes whose NoSchedule and NoExecute taints the
// pod tolerates.
type TaintToleration struct{}

// Name implements framework.Plugin.
func (TaintToleration) Name() string { return "TaintToleration" }

// Filter implements framework.FilterPlugin.
func (TaintToleration) Filter(ctx context.Context, _ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.FromContext(ctx), ni.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, enableComparisonOperators)
	if untolerated {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value))
	}
	return nil
}

// NodeUnschedulable drops cordoned nodes unless the pod tolerates the
// node.kubernetes.io/unschedulable taint.
type NodeUnschedulable struct{}

// Name implements framework.Plugin.
func (NodeUnschedulable) Name() string { return "NodeUnschedulable" }

// Filter implements framework.FilterPlugin.
func (NodeUnschedulable) Filter(ctx context.Context, _ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	if !ni.Unschedulable {
		return nil
	}
	if corev1helpers.TolerationsTolerateTaint(klog.FromContext(ctx), pod.Spec.Tolerations, &corev1.Taint{
		Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule,
	}, enableComparisonOperators) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonUnschedulable)
}
