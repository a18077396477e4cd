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

// Package bind is the Bind phase: one write that removes bindgate's gate
// and pins the pod to its node, then POST pods/binding with the pod's UID as
// precondition.
package bind

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
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

// Ours says whether bindgate places pod: it carries bindgate's gate, names
// bindgate as its scheduler, or bindgate lifted its gate (the pod carries
// bindgate's sealed policy record) and, unless it is bound already, still
// has to bind it (a bind that failed after the gate was lifted is retried).
func Ours(pod *corev1.Pod) bool {
	if HasGate(pod) || pod.Spec.SchedulerName == bindgatev1alpha1.SchedulerName {
		return true
	}
	_, ungatedByUs := SealedPolicy(pod)
	return ungatedByUs
}

// ungatePatch is the JSON merge patch (RFC 7386) Ungate sends, and the
// change ungateByUpdate applies to the pod it PUTs. It is built
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

// Method is how Ungate writes the pod.
type Method int

const (
	// ByPatch sends a JSON merge patch of the changed fields. It keeps every
	// field of the pod whatever this binary knows of the pod type, so it is
	// the method for API servers newer than the compiled-in client.
	ByPatch Method = iota
	// ByUpdate sends the whole changed pod (PUT, protobuf). The API server
	// then decodes protobuf instead of converting the stored pod to JSON,
	// applying the patch and decoding the result back: about 0.35 ms less
	// API-server CPU per pod (BenchmarkUngate). An update carries only the
	// fields this binary can decode, so it is used only when the API server
	// is not newer than the client (see MethodFor).
	ByUpdate
)

// String names the method in logs.
func (m Method) String() string {
	if m == ByUpdate {
		return "update"
	}
	return "patch"
}

// CompiledAPIMinor is the minor version of the k8s.io/api module this binary
// is built with (v0.37.x holds the types of Kubernetes 1.37). A test keeps it
// in step with go.mod.
const CompiledAPIMinor = 37

// MethodFor picks ByUpdate when the API server's minor version is not newer
// than the pod type compiled into this binary (so an update drops no field
// the server knows of), and ByPatch otherwise or when the server's version
// is unknown.
func MethodFor(server *version.Info) Method {
	if server == nil {
		return ByPatch
	}
	sv, err := utilversion.ParseGeneric(server.GitVersion)
	if err != nil {
		return ByPatch
	}
	if sv.Major() == 1 && sv.Minor() <= CompiledAPIMinor {
		return ByUpdate
	}
	return ByPatch
}

// Ungate removes bindgate's gate and, unless the pod names bindgate as its
// scheduler, pins it to node with a kubernetes.io/hostname nodeSelector, in
// one optimistic-locked write (method) that also records the policy, sealed,
// in the pod's annotations (so a restart between this write and the bind resumes
// the pod). pod is updated in place from the API server's answer, and left
// as it was when the write fails.
func Ungate(ctx context.Context, c client.Client, pod *corev1.Pod, node *corev1.Node, policy string, method Method) error {
	if !HasGate(pod) {
		return nil
	}
	patch := ungatePatch{
		Metadata: ungateMeta{ResourceVersion: pod.ResourceVersion, Annotations: make(map[string]string, 2)},
	}
	recordAnnotations(pod.UID, policy, patch.Metadata.Annotations)
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
	if method == ByUpdate {
		return ungateByUpdate(ctx, c, pod, &patch)
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

// ungateByUpdate applies patch to pod and PUTs it; pod's resourceVersion is
// the one read, so the update is optimistic-locked too. The fields it
// changes are put back when the update fails (a failed answer is decoded
// into nothing).
func ungateByUpdate(ctx context.Context, c client.Client, pod *corev1.Pod, patch *ungatePatch) error {
	gates, selector, annotations := pod.Spec.SchedulingGates, pod.Spec.NodeSelector, pod.Annotations
	pod.Spec.SchedulingGates = patch.Spec.SchedulingGates
	if len(patch.Spec.NodeSelector) > 0 {
		pod.Spec.NodeSelector = make(map[string]string, len(selector)+len(patch.Spec.NodeSelector))
		maps.Copy(pod.Spec.NodeSelector, selector)
		maps.Copy(pod.Spec.NodeSelector, patch.Spec.NodeSelector)
	}
	pod.Annotations = make(map[string]string, len(annotations)+len(patch.Metadata.Annotations))
	maps.Copy(pod.Annotations, annotations)
	maps.Copy(pod.Annotations, patch.Metadata.Annotations)
	if err := c.Update(ctx, pod); err != nil {
		pod.Spec.SchedulingGates, pod.Spec.NodeSelector, pod.Annotations = gates, selector, annotations
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
		recordAnnotations(pod.UID, state.Policy.Name, ann)
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
