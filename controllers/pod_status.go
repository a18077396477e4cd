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

package controllers

// What the pod controller writes on pods besides the scheduler's
// conditions: PolicyMatched, and the end of a stranded pod's wait.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
)

// strandedAttempts is how many failed cycles in a row a pinned pod may have
// before it counts as stranded, when the node it is pinned to no longer
// takes it (Scheduler.FitsOn).
const strandedAttempts = 3

// pinnedByUs returns the node a pod bindgate ungated and pinned is held to
// (its kubernetes.io/hostname nodeSelector), when the pod is still unbound:
// the pin cannot be removed (a pod's nodeSelector is immutable once it has
// no scheduling gate), so the pod can only bind there.
func pinnedByUs(pod *corev1.Pod) (string, bool) {
	if pod.Spec.NodeName != "" || bind.HasGate(pod) || pod.Spec.SchedulerName == bindgatev1alpha1.SchedulerName {
		return "", false
	}
	if _, ok := bind.SealedPolicy(pod); !ok {
		return "", false
	}
	host := pod.Spec.NodeSelector[bind.HostnameLabel]
	return host, host != ""
}

// pinnedNodeGone says whether no node carries the pinned hostname.
func (r *PodReconciler) pinnedNodeGone(ctx context.Context, host string) (bool, error) {
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes, client.MatchingLabels{bind.HostnameLabel: host}, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("listing the nodes of %s=%s: %w", bind.HostnameLabel, host, err)
	}
	if len(nodes.Items) > 0 {
		return false, nil
	}
	// A node without the label is pinned by its name.
	n := &corev1.Node{}
	err := r.Get(ctx, client.ObjectKey{Name: host}, n)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// recoverStranded ends the wait of a pinned pod that can never bind (why
// says so): a pod with a controller owner is deleted, so that its owner
// creates a new one bindgate places afresh; an unowned pod gets
// PodScheduled=False, reason Stranded, with what to do. Either way the
// event says why, and any reservation it held is released.
func (r *PodReconciler) recoverStranded(ctx context.Context, pod *corev1.Pod, why string) error {
	log := ctrl.LoggerFrom(ctx)
	r.Handlers.Release(pod)
	r.Queue.Forget(client.ObjectKeyFromObject(pod), pod.UID)
	if owner := metav1.GetControllerOf(pod); owner != nil {
		msg := fmt.Sprintf("Deleting the pod: %s; its %s %s creates a new one", why, owner.Kind, owner.Name)
		r.Scheduler.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, bindgatev1alpha1.ReasonStranded, "Recover", msg)
		log.Info("Deleting a stranded pod", "pod", klog.KObj(pod), "why", why)
		err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting stranded pod %s: %w", klog.KObj(pod), err)
		}
		return nil
	}
	msg := fmt.Sprintf("%s; the pin cannot be lifted: delete the pod and create it again", why)
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == bindgatev1alpha1.ReasonStranded && c.Message == msg {
			return nil // said already
		}
	}
	r.Scheduler.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, bindgatev1alpha1.ReasonStranded, "Recover", msg)
	return r.Scheduler.Conditions().Set(ctx, pod, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: bindgatev1alpha1.ReasonStranded, Message: msg,
	})
}

// setMatched writes the PolicyMatched condition (and a warning event when
// no policy takes the pod) when it changes. A matched pod that never had
// the condition needs no write.
func (r *PodReconciler) setMatched(ctx context.Context, pod *corev1.Pod, pol *bindgatev1alpha1.BindingPolicy, reason, msg string) error {
	status := corev1.ConditionFalse
	if pol != nil {
		status, reason, msg = corev1.ConditionTrue, "Matched", "BindingPolicy "+pol.Name
	}
	found := false
	for _, c := range pod.Status.Conditions {
		if c.Type == bindgatev1alpha1.PodConditionPolicyMatched {
			if c.Status == status && c.Reason == reason && c.Message == msg {
				return nil
			}
			found = true
		}
	}
	if status == corev1.ConditionTrue && !found {
		return nil
	}
	if status == corev1.ConditionFalse {
		r.Scheduler.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, reason, "Matching", msg)
	}
	return r.Scheduler.Conditions().Set(ctx, pod, corev1.PodCondition{
		Type: bindgatev1alpha1.PodConditionPolicyMatched, Status: status, Reason: reason, Message: msg,
	})
}
