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

// Package bind is the Bind phase: one patch that removes bindgate's gate
// and pins the pod to its node, then POST pods/binding with the pod's UID as
// precondition.
package bind

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
)

// Name is the plugin name.
const Name = "DefaultBinder"

// HostnameLabel is the node label the pin selects on.
const HostnameLabel = corev1.LabelHostname

// Binder binds through the API server.
type Binder struct {
	Client client.Client
	// PostBindPending names the PostBind webhooks still to be notified; it
	// is recorded on the binding's annotations.
	PostBindPending func(policy *bindgatev1alpha1.BindingPolicy) string
}

var _ framework.BindPlugin = &Binder{}

// Name implements framework.Plugin.
func (b *Binder) Name() string { return Name }

// OtherGates returns the scheduling gates other than bindgate's.
func OtherGates(pod *corev1.Pod) []string {
	var out []string
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name != bindgatev1alpha1.SchedulingGate {
			out = append(out, g.Name)
		}
	}
	return out
}

// HasGate says whether pod carries bindgate's gate.
func HasGate(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == bindgatev1alpha1.SchedulingGate
	})
}

// ungatePatch is the JSON merge patch (RFC 7386) Ungate sends. It is built
// from the few fields it changes rather than by diffing two whole pods (which
// marshals both to JSON, a tenth of the operator's CPU at a few hundred binds
// per second). metadata.resourceVersion makes it optimistic-locked: the API
// server answers 409 Conflict when the pod changed since it was read.
type ungatePatch struct {
	Metadata ungateMeta `json:"metadata"`
	Spec     ungateSpec `json:"spec"`
}

type ungateMeta struct {
	ResourceVersion string            `json:"resourceVersion"`
	Annotations     map[string]string `json:"annotations"`
}

type ungateSpec struct {
	// SchedulingGates replaces the whole list (merge patches replace
	// lists); nil encodes as null, which removes the field.
	SchedulingGates []corev1.PodSchedulingGate `json:"schedulingGates"`
	NodeSelector    map[string]string          `json:"nodeSelector,omitempty"`
}

// Ungate removes bindgate's gate and, unless the pod names bindgate as its
// scheduler, pins it to node with a kubernetes.io/hostname nodeSelector, in
// one optimistic-locked patch that also records the policy in the pod's
// annotations (so a restart between this patch and the bind resumes the
// pod). pod is updated in place from the API server's answer.
func Ungate(ctx context.Context, c client.Client, pod *corev1.Pod, node *corev1.Node, policy string) error {
	if !HasGate(pod) {
		return nil
	}
	patch := ungatePatch{
		Metadata: ungateMeta{ResourceVersion: pod.ResourceVersion, Annotations: map[string]string{bindgatev1alpha1.PolicyAnnotation: policy}},
	}
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name != bindgatev1alpha1.SchedulingGate {
			patch.Spec.SchedulingGates = append(patch.Spec.SchedulingGates, g)
		}
	}
	if pod.Spec.SchedulerName != bindgatev1alpha1.SchedulerName {
		host := node.Labels[HostnameLabel]
		if host == "" {
			host = node.Name
		}
		patch.Spec.NodeSelector = map[string]string{HostnameLabel: host}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding the ungate patch: %w", err)
	}
	if err := c.Patch(ctx, pod, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("removing the scheduling gate: %w", err)
	}
	return nil
}

var alreadyAssigned = regexp.MustCompile(`is already assigned to node "([^"]+)"`)

// AlreadyBoundTo returns the node named by an "already assigned" conflict.
func AlreadyBoundTo(err error) (string, bool) {
	if !apierrors.IsConflict(err) {
		return "", false
	}
	m := alreadyAssigned.FindStringSubmatch(err.Error())
	if m == nil {
		return "", false
	}
	return m[1], true
}

// Bind implements framework.BindPlugin: POST pods/binding. A pod already
// bound to nodeName counts as success.
func (b *Binder) Bind(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, nodeName string) *framework.Status {
	ann := map[string]string{}
	if state.Policy != nil {
		ann[bindgatev1alpha1.PolicyAnnotation] = state.Policy.Name
		if b.PostBindPending != nil {
			if pending := b.PostBindPending(state.Policy); pending != "" {
				ann[bindgatev1alpha1.PostBindPendingAnnotation] = pending
			}
		}
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Annotations: ann},
		Target:     corev1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	err := b.Client.SubResource("binding").Create(ctx, pod, binding)
	if err == nil {
		return nil
	}
	if node, ok := AlreadyBoundTo(err); ok {
		if node == nodeName {
			return nil
		}
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("pod is already bound to node %s", node))
	}
	return framework.AsStatus(fmt.Errorf("binding to node %s: %w", nodeName, err))
}
