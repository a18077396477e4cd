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

// Package podgate is the mutating admission webhook that hands new pods to
// bindgate by adding the scheduling gate scheduling.bindgate.dev/gate, or, in
// the scheduler-name mode, by naming bindgate as the pod's scheduler.
//
// The handler reads no other object: which pods reach it is decided by the
// webhook configuration alone. Two webhook entries share one path:
//
//   - gate-namespace: namespaceSelector scheduling.bindgate.dev/enabled=true,
//     every new pod in an enabled namespace;
//   - gate-policy: objectSelector scheduling.bindgate.dev/policy Exists, every
//     new pod pinned to a policy, in any namespace.
//
// A pod that matches both is called twice; the handler is idempotent, so it
// ends with the gate exactly once.
//
// failurePolicy is Fail: while the operator is unreachable, creating a pod
// that opted in (enabled namespace, or the policy label) fails with the
// webhook's error, instead of admitting it ungated past every policy. Pods
// that opted in by carrying the gate themselves need no webhook. Neither
// entry ever matches kube-system, kube-public, kube-node-lease or the
// operator's own namespace (bindgate-system; the Helm chart's release
// namespace), so the control plane and bindgate itself always start.
package podgate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
)

// Path is where the webhook server serves the handler. It must match the
// path in the +kubebuilder:webhook markers below.
const Path = "/mutate-v1-pod-gate"

// The webhook configuration (config/webhook/manifests.yaml is generated from
// these markers by `make manifests`; the Helm chart renders the same entries).
//
// +kubebuilder:webhookconfiguration:mutating=true,name=mutating-webhook-configuration
// +kubebuilder:webhook:path=/mutate-v1-pod-gate,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=gate-namespace.scheduling.bindgate.dev,admissionReviewVersions=v1,timeoutSeconds=5,reinvocationPolicy=Never,patch=`{"namespaceSelector":{"matchLabels":{"scheduling.bindgate.dev/enabled":"true"},"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-public","kube-node-lease","bindgate-system"]}]}}`
// +kubebuilder:webhook:path=/mutate-v1-pod-gate,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=gate-policy.scheduling.bindgate.dev,admissionReviewVersions=v1,timeoutSeconds=5,reinvocationPolicy=Never,patch=`{"objectSelector":{"matchExpressions":[{"key":"scheduling.bindgate.dev/policy","operator":"Exists"}]},"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-public","kube-node-lease","bindgate-system"]}]}}`

// Mode is how the webhook hands a pod to bindgate (--pod-webhook-mode).
type Mode string

const (
	// ModeGate adds bindgate's scheduling gate. bindgate lifts it with one
	// more API write before the binding; until then an admin may remove the
	// gate to hand the pod back to kube-scheduler.
	ModeGate Mode = "gate"
	// ModeSchedulerName sets spec.schedulerName: bindgate on pods left to
	// the default scheduler: kube-scheduler ignores them and bindgate binds
	// them without a gate to lift, one API write fewer per pod (in make
	// bench about half the API-server CPU per pod; docs/benchmarks.md). The
	// choice is final: schedulerName cannot change after creation. Pods
	// that name another scheduler are gated as in ModeGate.
	ModeSchedulerName Mode = "scheduler-name"
)

// ParseMode checks a --pod-webhook-mode value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeGate, ModeSchedulerName:
		return m, nil
	}
	return "", fmt.Errorf("--pod-webhook-mode=%q: want %s or %s", s, ModeGate, ModeSchedulerName)
}

// Handler hands the pods that reach it to bindgate, per Mode (empty: gate).
type Handler struct {
	Mode Mode
}

var _ admission.Handler = Handler{}

// Handle gates, or names bindgate as the scheduler of, a new, unbound pod
// that is not bindgate's yet. Every other request is allowed unchanged.
func (h Handler) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.SubResource != "" ||
		req.Kind.Group != "" || req.Kind.Kind != "Pod" {
		return admission.Allowed("not a pod creation")
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the pod: %w", err))
	}
	if h.Mode == ModeSchedulerName {
		if patch, ok := SchedulerNamePatch(pod); ok {
			return admission.Patched("set schedulerName "+bindgatev1alpha1.SchedulerName, patch)
		}
		if pod.Spec.SchedulerName == bindgatev1alpha1.SchedulerName {
			return admission.Allowed("already names bindgate as its scheduler")
		}
	}
	patch, ok := GatePatch(pod)
	if !ok {
		return admission.Allowed("no gate needed")
	}
	return admission.Patched("added the "+bindgatev1alpha1.SchedulingGate+" scheduling gate", patch)
}

// SchedulerNamePatch returns the JSON patch operation that names bindgate as
// pod's scheduler, and false when the pod is not left to the default
// scheduler (it names another one, or bindgate already), is already
// assigned to a node, or already carries bindgate's gate.
func SchedulerNamePatch(pod *corev1.Pod) (jsonpatch.JsonPatchOperation, bool) {
	if pod.Spec.NodeName != "" || bind.HasGate(pod) {
		return jsonpatch.JsonPatchOperation{}, false
	}
	if pod.Spec.SchedulerName != "" && pod.Spec.SchedulerName != corev1.DefaultSchedulerName {
		return jsonpatch.JsonPatchOperation{}, false
	}
	return jsonpatch.NewOperation("add", "/spec/schedulerName", bindgatev1alpha1.SchedulerName), true
}

// GatePatch returns the JSON patch operation that adds the gate to pod, and
// false when the pod needs none: it is already assigned to a node (the API
// server refuses gates on such pods) or already carries the gate.
func GatePatch(pod *corev1.Pod) (jsonpatch.JsonPatchOperation, bool) {
	if pod.Spec.NodeName != "" || bind.HasGate(pod) {
		return jsonpatch.JsonPatchOperation{}, false
	}
	gate := corev1.PodSchedulingGate{Name: bindgatev1alpha1.SchedulingGate}
	if len(pod.Spec.SchedulingGates) == 0 {
		// The field may be absent or null: replace it as a whole.
		return jsonpatch.NewOperation("add", "/spec/schedulingGates", []corev1.PodSchedulingGate{gate}), true
	}
	return jsonpatch.NewOperation("add", "/spec/schedulingGates/-", gate), true
}

// Setup registers the handler, in mode, at Path on the manager's webhook server. The
// first call to mgr.GetWebhookServer adds the server to the manager, so call
// Setup only once the serving certificate is in place (see
// internal/admission/certs).
func Setup(mgr ctrl.Manager, mode Mode) error {
	mgr.GetWebhookServer().Register(Path, &webhook.Admission{Handler: Handler{Mode: mode}})
	return nil
}
