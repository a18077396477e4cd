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
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/ledger"
	"github.com/bindgate/bindgate/internal/metrics"
	"github.com/bindgate/bindgate/internal/permit"
)

// gangRecheck bounds the wait of a gang that cannot be placed yet; node and
// pod events requeue it sooner.
const gangRecheck = 3 * time.Second

// gangOf returns the policy's gang condition and the pod's group and
// minMember (the group's annotation overrides the condition).
func gangOf(policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod) (name, group string, minMember int, ok bool) {
	if policy.Spec.Permit == nil {
		return "", "", 0, false
	}
	group = pod.Labels[bindgatev1alpha1.GroupLabel]
	if group == "" {
		return "", "", 0, false
	}
	for _, c := range policy.Spec.Permit.Conditions {
		if c.Gang == nil {
			continue
		}
		minMember = int(c.Gang.MinMember)
		if v, err := strconv.Atoi(pod.Annotations[bindgatev1alpha1.MinMemberAnnotation]); err == nil && v >= 1 {
			minMember = v
		}
		return c.Name, group, minMember, true
	}
	return "", "", 0, false
}

// gangReserve reserves a gang all-or-nothing before any member takes a
// reservation of its own. Members already bound or holding a reservation
// count as placed; once minMember are placed, later members join the gang
// and reserve one by one (done=false, the pod not held). Otherwise every
// unplaced gated member is placed in one step under gangMu: either all of
// them get a reservation (done=false, the pod now held) or none does, and
// each says why (done=true).
func (s *Scheduler) gangReserve(ctx context.Context, state *framework.CycleState, pod *corev1.Pod) (Outcome, bool, error) {
	cond, group, minMember, ok := gangOf(state.Policy, pod)
	if !ok {
		return Outcome{}, false, nil
	}
	s.gangMu.Lock()
	defer s.gangMu.Unlock()
	if _, held := s.Cache.Reserved(pod.UID); held {
		return Outcome{}, false, nil // reserved by another member's step
	}
	var list corev1.PodList
	if err := s.Client.List(ctx, &list, client.InNamespace(pod.Namespace),
		client.MatchingLabels{bindgatev1alpha1.GroupLabel: group}); err != nil {
		return Outcome{Result: metrics.ResultError}, true, fmt.Errorf("listing gang %s: %w", group, err)
	}
	placed := 0
	var pending []*corev1.Pod
	for i := range list.Items {
		m := &list.Items[i]
		if m.DeletionTimestamp != nil {
			continue
		}
		if _, held := s.Cache.Reserved(m.UID); held || m.Spec.NodeName != "" {
			placed++
			continue
		}
		if m.UID != pod.UID && (!bind.HasGate(m) || m.Labels[bindgatev1alpha1.PolicyLabel] != pod.Labels[bindgatev1alpha1.PolicyLabel]) {
			continue
		}
		pending = append(pending, m)
	}
	if placed >= minMember {
		return Outcome{}, false, nil // a permitted gang: join it
	}
	if placed+len(pending) < minMember {
		msg := fmt.Sprintf("gang %s: %d/%d members exist, none reserved", group, placed+len(pending), minMember)
		return s.gangWait(ctx, cond, pending, msg), true, nil
	}

	log := ctrl.LoggerFrom(ctx)
	var reserved []*corev1.Pod
	rollback := func() {
		for _, m := range reserved {
			s.forgetCycle(ctx, m)
			s.Cache.Unreserve(m.UID, false)
			s.Ledger.Release(state.Policy.Name, m.UID)
		}
	}
	// One scheduling cycle for the whole gang: each member sees the ones
	// reserved before it (anti-affinity among members, spread, ports).
	s.Placer.Lock()
	for _, m := range pending {
		ms := framework.NewCycleState(state.Policy, m)
		var why string
		if c, err := s.Placer.SelectNode(ctx, m, state.Policy); err != nil {
			why = err.Error()
		} else if err := s.assume(ctx, c, m, ms, time.Time{}); err != nil {
			why = err.Error()
		}
		if why != "" {
			n := len(reserved)
			rollback()
			s.Placer.Unlock()
			msg := fmt.Sprintf("gang %s: only %d/%d members fit, none reserved: %s", group, placed+n, placed+len(pending), why)
			return s.gangWait(ctx, cond, pending, msg), true, nil
		}
		reserved = append(reserved, m)
	}
	s.Placer.Unlock()
	now := s.Clock.Now()
	for _, m := range reserved {
		res, _ := s.Cache.Reserved(m.UID)
		r := ledger.NewReservation(m, res.Node, framework.PodRequests(m).ResourceList(), now, nil)
		if err := s.Ledger.Record(ctx, state.Policy.Name, r); err != nil {
			rollback()
			return Outcome{Result: metrics.ResultError, RequeueAfter: 100 * time.Millisecond}, true, nil
		}
	}
	log.V(2).Info("Reserved gang", "group", group, "members", len(reserved), "pod", klog.KObj(pod))
	if s.Wake != nil {
		for _, m := range reserved {
			if m.UID != pod.UID {
				s.Wake(types.NamespacedName{Namespace: m.Namespace, Name: m.Name})
			}
		}
	}
	return Outcome{}, false, nil
}

// gangWait reports on every pending member why the gang waits.
func (s *Scheduler) gangWait(ctx context.Context, cond string, members []*corev1.Pod, msg string) Outcome {
	full := cond + ": " + msg
	for _, m := range members {
		if err := s.Conditions().Permitted(ctx, m, corev1.ConditionFalse, bindgatev1alpha1.ReasonWaiting, full); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Recording the gang wait", "pod", klog.KObj(m))
		}
	}
	return Outcome{Result: metrics.ResultUnschedulable, Unschedulable: true, RequeueAfter: gangRecheck}
}

// releaseGang releases, together with pod, the reservations every other
// unbound member of its gang holds: a gang times out as a whole, so no
// member keeps capacity the others can no longer use. The members are woken
// to report their own timeout.
func (s *Scheduler) releaseGang(ctx context.Context, state *framework.CycleState, pod *corev1.Pod) {
	_, group, _, ok := gangOf(state.Policy, pod)
	if !ok {
		return
	}
	s.gangMu.Lock()
	defer s.gangMu.Unlock()
	var list corev1.PodList
	if err := s.Client.List(ctx, &list, client.InNamespace(pod.Namespace),
		client.MatchingLabels{bindgatev1alpha1.GroupLabel: group}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the gang to release it", "group", group)
		return
	}
	for i := range list.Items {
		m := &list.Items[i]
		if m.UID == pod.UID || m.Spec.NodeName != "" {
			continue
		}
		if res, held := s.Cache.Reserved(m.UID); held && res.Policy == state.Policy.Name {
			s.unreserve(ctx, state, m, res.Node)
			msg := fmt.Sprintf("released with gang %s: the permit wait of %s timed out", group, pod.Name)
			if err := s.Conditions().Permitted(ctx, m, corev1.ConditionFalse, bindgatev1alpha1.ReasonTimeout, msg); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Recording the gang timeout", "pod", klog.KObj(m))
			}
			if permit.OnTimeout(state.Policy) == bindgatev1alpha1.PermitTimeoutReject {
				s.holdAfterReject(m, state.Policy)
				_ = s.Conditions().NotScheduled(ctx, m, corev1.PodReasonUnschedulable, msg)
			} else {
				s.holdAfterPermitTimeout(m.UID)
			}
			if s.Wake != nil {
				s.Wake(client.ObjectKeyFromObject(m))
			}
		}
	}
}

// reservedNow returns the pod's reservation. For a gang member it is read
// under gangMu, so that a reservation another member's step holds only
// tentatively (and may still roll back) is never taken for a final one.
func (s *Scheduler) reservedNow(policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod) (cache.Reservation, bool) {
	if _, _, _, gang := gangOf(policy, pod); gang {
		s.gangMu.Lock()
		defer s.gangMu.Unlock()
	}
	return s.Cache.Reserved(pod.UID)
}
