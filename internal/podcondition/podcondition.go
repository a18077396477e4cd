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

// Package podcondition is the one place bindgate writes pod conditions
// (PodScheduled, Permitted, PolicyMatched), with kube-scheduler's
// UpdatePodCondition semantics: nothing is written when the condition
// already says the same, and lastTransitionTime changes only when the
// status does.
package podcondition

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// EventFailedScheduling is kube-scheduler's event reason for a pod that fits
// nowhere (or was refused).
const EventFailedScheduling = "FailedScheduling"

// Writer patches pod conditions through the status subresource.
type Writer struct {
	Client   client.Client
	Clock    clock.PassiveClock
	Recorder events.EventRecorder
}

// Merge returns the condition as it is to be written on pod, with
// lastTransitionTime kept from the current one when the status is the same
// (else now), and whether that changes anything.
func Merge(pod *corev1.Pod, cond corev1.PodCondition, now metav1.Time) (corev1.PodCondition, bool) {
	status := corev1.PodStatus{Conditions: pod.Status.Conditions}
	_, old := podutil.GetPodCondition(&status, cond.Type)
	// UpdatePodCondition stamps metav1.Now(); the writer's clock decides.
	cond.LastProbeTime = metav1.Time{}
	if old != nil {
		cond.LastProbeTime = old.LastProbeTime
	}
	status.Conditions = append([]corev1.PodCondition(nil), pod.Status.Conditions...)
	changed := podutil.UpdatePodCondition(&status, &cond)
	if old == nil || old.Status != cond.Status {
		cond.LastTransitionTime = now
	}
	return cond, changed
}

// Set writes cond on the pod unless the pod already says exactly that. The
// API server's answer is decoded into pod (controller-runtime's Patch), so
// pass a copy of an object others read, such as one shared by a gang.
func (w *Writer) Set(ctx context.Context, pod *corev1.Pod, cond corev1.PodCondition) error {
	cond, changed := Merge(pod, cond, metav1.NewTime(w.Clock.Now()))
	if !changed {
		return nil
	}
	raw, err := json.Marshal(map[string]any{
		"status": map[string]any{"conditions": []corev1.PodCondition{cond}},
	})
	if err != nil {
		return fmt.Errorf("encoding a patch: %w", err)
	}
	err = w.Client.Status().Patch(ctx, pod, client.RawPatch("application/strategic-merge-patch+json", raw))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("setting pod condition %s: %w", cond.Type, err)
	}
	return nil
}

// Get returns the pod's condition of type t, or nil.
func Get(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	_, c := podutil.GetPodCondition(&pod.Status, t)
	return c
}

// NotScheduled writes PodScheduled=False with reason and message and emits
// FailedScheduling, unless the pod already says exactly that. A pod told it
// is stranded (pinned where it can no longer bind) keeps that, more
// specific, reason while it stays unschedulable: rewriting the fit summary
// over it every cycle would hide what to do.
func (w *Writer) NotScheduled(ctx context.Context, pod *corev1.Pod, reason, msg string) error {
	if c := Get(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
		if c.Reason == reason && c.Message == msg {
			return nil
		}
		if c.Reason == bindgatev1alpha1.ReasonStranded && reason == corev1.PodReasonUnschedulable {
			return nil
		}
	}
	w.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, EventFailedScheduling, "Scheduling", msg)
	return w.Set(ctx, pod, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: msg,
	})
}

// Permitted writes the Permitted condition.
func (w *Writer) Permitted(ctx context.Context, pod *corev1.Pod, status corev1.ConditionStatus, reason, msg string) error {
	return w.Set(ctx, pod, corev1.PodCondition{
		Type: bindgatev1alpha1.PodConditionPermitted, Status: status, Reason: reason, Message: msg,
	})
}
