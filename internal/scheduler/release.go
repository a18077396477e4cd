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

package scheduler

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/cache"
)

// EventReservationReleased is the reason of the event a pod gets when its
// reservation is released because what it was held on or by went away.
const EventReservationReleased = "ReservationReleased"

// releaseGone releases a reservation whose node or policy went away and
// tells the pod why, so that a pod placed again elsewhere (or matched to
// another policy) does not change silently.
func (s *Scheduler) releaseGone(ctx context.Context, pod *corev1.Pod, res cache.Reservation, msg string) {
	ctrl.LoggerFrom(ctx).V(2).Info("Releasing reservation", "pod", klog.KObj(pod), "node", res.Node, "policy", res.Policy, "reason", msg)
	s.forgetCycle(ctx, pod)
	s.waits.Delete(pod.UID)
	s.releaseRecord(res.Policy, pod.UID)
	s.Cache.Unreserve(pod.UID, false)
	s.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, EventReservationReleased, "Reserve", msg)
}

// Forget drops what the scheduler keeps in memory for a pod that was deleted
// or bound (by another replica, or by anyone but this process's bind in
// flight): its cycle's plugin state (the Unreserve plugins run, as
// kube-scheduler runs them for a deleted pod waiting in Permit), the permit
// deadline it announced, its run of refusals under Reserve and its hold
// after a permit timeout. Without it, a
// pod deleted while it waited left them behind for good. The reservation
// itself is the cache's and the ledger's to release.
func (s *Scheduler) Forget(ctx context.Context, pod *corev1.Pod) {
	if _, binding := s.binding.Load(pod.UID); binding {
		return // the bind in flight cleans up after itself
	}
	s.forgetCycle(ctx, pod)
	s.waits.Delete(pod.UID)
	s.unfitStreaks.Delete(pod.UID)
	// Every update of every bound pod comes here: the rate limiter's lock
	// is taken only for a pod that has a hold.
	if _, held := s.permitHolds.Load(pod.UID); held {
		s.clearPermitHold(pod.UID)
	}
}

// ReleaseIfPolicyGone releases the pod's reservation when the policy that
// holds it no longer exists, is not Ready or was switched to DryRun (its
// pods cannot go on under it), with a ReservationReleased event; next says what happens to the pod
// now. It reports whether it released one.
func (s *Scheduler) ReleaseIfPolicyGone(ctx context.Context, pod *corev1.Pod, next string) (bool, error) {
	res, held := s.Cache.Reserved(pod.UID)
	if !held {
		return false, nil
	}
	p := &bindgatev1alpha1.BindingPolicy{}
	err := s.Client.Get(ctx, client.ObjectKey{Name: res.Policy}, p)
	why := "was deleted"
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("reading BindingPolicy %s: %w", res.Policy, err)
	case p.Spec.Mode == bindgatev1alpha1.ModeDryRun:
		why = "was switched to DryRun mode"
	default:
		ready := meta.FindStatusCondition(p.Status.Conditions, bindgatev1alpha1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.ObservedGeneration != p.Generation {
			return false, nil
		}
		why = fmt.Sprintf("is not Ready (%s: %s)", ready.Reason, ready.Message)
	}
	s.releaseGone(ctx, pod, res, fmt.Sprintf("Released the reservation on node %s: BindingPolicy %s, which held it, %s; %s",
		res.Node, res.Policy, why, next))
	return true, nil
}
