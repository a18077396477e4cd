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
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/ledger"
	"github.com/bindgate/bindgate/internal/metrics"
	"github.com/bindgate/bindgate/internal/permit"
	"github.com/bindgate/bindgate/internal/podcondition"
)

// Event reasons of the permit phase.
const (
	EventPermitWaiting  = "PermitWaiting"
	EventPermitRejected = "PermitRejected"
	EventPermitTimeout  = "PermitTimeout"
)

// permit runs the policy's permit plugins. A non-nil *Status ends the cycle
// here (see Schedule).
//
// The pod's permit deadline is its reservation's reservedAt plus the
// policy's permit timeout; every wait ends by the deadline at the latest, so
// the requeue timer enforces it. A pod that starts waiting has the deadline
// recorded in the ledger (status.waitingPods counts it) before it is
// reported waiting through the Permitted condition and a PermitWaiting event.
func (s *Scheduler) permit(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node) (*framework.Status, time.Duration) {
	if s.PermitPlugins == nil {
		return nil, 0
	}
	plugins := s.PermitPlugins(state.Policy)
	if len(plugins) == 0 {
		// A pod that waited under another policy (since deleted) or an
		// earlier generation must not keep saying so once bound.
		if c := podcondition.Get(pod, bindgatev1alpha1.PodConditionPermitted); c != nil && c.Status != corev1.ConditionTrue {
			msg := fmt.Sprintf("BindingPolicy %s has no permit conditions", state.Policy.Name)
			if err := s.Conditions().Permitted(ctx, pod, corev1.ConditionTrue, bindgatev1alpha1.ReasonPermitted, msg); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Recording the permit approval", "pod", klog.KObj(pod))
			}
		}
		return nil, 0
	}
	log := ctrl.LoggerFrom(ctx)
	policy := state.Policy
	reservedAt := s.Clock.Now()
	if res, held := s.Cache.Reserved(pod.UID); held && !res.ReservedAt.IsZero() {
		reservedAt = res.ReservedAt
	}
	deadline := reservedAt.Add(permit.Timeout(policy))
	var (
		waitFor time.Duration
		pending []string
		notes   []string // what approving conditions said (a gang's domain)
	)
	for _, p := range plugins {
		st, after := p.Permit(ctx, state, pod, node)
		switch {
		case st.IsSuccess():
			if msg := st.Message(); msg != "" {
				notes = append(notes, fmt.Sprintf("%s: %s", p.Name(), msg))
			}
		case st.IsWait():
			pending = append(pending, fmt.Sprintf("%s: %s", p.Name(), st.Message()))
			if after > 0 && (waitFor == 0 || after < waitFor) {
				waitFor = after
			}
		default:
			msg := fmt.Sprintf("rejected by permit condition %s: %s", p.Name(), st.Message())
			s.unreserve(ctx, state, pod, node.Name)
			s.observePermit(policy, metrics.PermitRejected, reservedAt)
			s.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, EventPermitRejected, "Permit", msg)
			if err := s.Conditions().Permitted(ctx, pod, corev1.ConditionFalse, bindgatev1alpha1.ReasonRejected, msg); err != nil {
				log.Error(err, "Recording the permit rejection", "pod", klog.KObj(pod))
			}
			_ = s.Conditions().NotScheduled(ctx, pod, corev1.PodReasonUnschedulable, msg)
			return framework.NewStatus(framework.Unschedulable, msg), 0
		}
	}
	now := s.Clock.Now()
	if len(pending) == 0 {
		s.clearPermitHold(pod.UID)
		s.observePermit(policy, metrics.PermitAllowed, reservedAt)
		msg := "All permit conditions approved"
		if len(notes) > 0 {
			msg += "; " + strings.Join(notes, "; ")
		}
		if err := s.Conditions().Permitted(ctx, pod, corev1.ConditionTrue, bindgatev1alpha1.ReasonPermitted, msg); err != nil {
			log.Error(err, "Recording the permit approval", "pod", klog.KObj(pod))
		}
		return nil, 0
	}
	msg := strings.Join(pending, "; ")
	if !now.Before(deadline) {
		return s.permitTimeout(ctx, state, pod, node, msg, reservedAt)
	}

	cur := podcondition.Get(pod, bindgatev1alpha1.PodConditionPermitted)
	announced, ok := s.waits.Load(pod.UID)
	if cur == nil || cur.Status != corev1.ConditionFalse || cur.Reason != bindgatev1alpha1.ReasonWaiting ||
		!ok || !announced.(time.Time).Equal(deadline) {
		// A new wait: make the deadline durable first, then report it.
		dl := metav1.NewTime(deadline)
		r := ledger.NewReservation(pod, node.Name, state.PodRequests.ResourceList(), reservedAt, &dl)
		if err := s.record(ctx, policy.Name, r); err != nil {
			if errors.Is(err, ledger.ErrLostRace) || errors.Is(err, ledger.ErrPolicyGone) {
				s.unreserve(ctx, state, pod, node.Name)
				return retry(time.Millisecond, err.Error())
			}
			return framework.AsStatus(fmt.Errorf("recording the permit deadline: %w", err)), 0
		}
		s.Recorder.Eventf(pod, node, corev1.EventTypeNormal, EventPermitWaiting, "Permit",
			"Waiting on node %s until %s for permit conditions: %s", node.Name, deadline.UTC().Format(time.RFC3339), msg)
		s.waits.Store(pod.UID, deadline)
	}
	if err := s.Conditions().Permitted(ctx, pod, corev1.ConditionFalse, bindgatev1alpha1.ReasonWaiting, msg); err != nil {
		log.Error(err, "Recording the permit wait", "pod", klog.KObj(pod))
	}
	remaining := deadline.Sub(now)
	if waitFor <= 0 || waitFor > remaining {
		waitFor = remaining
	}
	log.V(4).Info("Waiting in Permit", "pod", klog.KObj(pod), "pending", pending, "deadline", deadline)
	return framework.NewStatus(framework.Wait, msg), waitFor
}

// permitTimeout ends a wait whose deadline passed: the reservation is
// released and the pod is either marked unschedulable until something that
// may change the answer changes (Reject) or requeued with backoff (Retry).
func (s *Scheduler) permitTimeout(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node, pending string, reservedAt time.Time) (*framework.Status, time.Duration) {
	policy := state.Policy
	action := permit.OnTimeout(policy)
	msg := fmt.Sprintf("permit timeout (%s) waiting for: %s", permit.Timeout(policy), pending)
	// The gang's other members first, under the gang's lock: with this
	// pod's reservation gone first, another member's own cycle could see
	// the gang short (Check) and let go of its reservation before Release
	// reached it, without the timeout's condition and hold, and place the
	// whole gang again at once.
	s.Gangs().Release(ctx, state.Policy, pod)
	s.unreserve(ctx, state, pod, node.Name)
	s.observePermit(policy, metrics.PermitTimeout, reservedAt)
	s.Recorder.Eventf(pod, node, corev1.EventTypeWarning, EventPermitTimeout, "Permit", "%s (onTimeout: %s)", msg, action)
	if err := s.Conditions().Permitted(ctx, pod, corev1.ConditionFalse, bindgatev1alpha1.ReasonTimeout, msg); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Recording the permit timeout", "pod", klog.KObj(pod))
	}
	// The pod takes no new reservation before its hold ends, even when
	// the condition and event writes above requeue it at once.
	if action == bindgatev1alpha1.PermitTimeoutRetry {
		return framework.NewStatus(framework.Wait, msg), s.holdAfterPermitTimeout(pod.UID)
	}
	hold := s.holdAfterReject(pod, policy)
	_ = s.Conditions().NotScheduled(ctx, pod, corev1.PodReasonUnschedulable, msg)
	return framework.NewStatus(framework.Unschedulable, msg), hold
}

func (s *Scheduler) observePermit(policy *bindgatev1alpha1.BindingPolicy, result string, reservedAt time.Time) {
	metrics.PermitWaitDuration.WithLabelValues(result, policy.Name).Observe(s.Clock.Since(reservedAt).Seconds())
}
