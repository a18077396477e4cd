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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/gang"
	"github.com/bindgate/bindgate/internal/ledger"
	"github.com/bindgate/bindgate/internal/permit"
)

// gangRecheck bounds the wait of a gang that cannot be placed yet; node and
// pod events requeue it sooner.
const gangRecheck = 3 * time.Second

// Gangs returns the coordinator of the gangs' group step (created on first
// use over this scheduler).
func (s *Scheduler) Gangs() *gang.Coordinator {
	s.gangsOnce.Do(func() {
		s.gangs = &gang.Coordinator{Client: s.Client, Clock: s.Clock, Handle: gangHandle{s}}
	})
	return s.gangs
}

// gangReserve runs the gang step; a non-nil *Status ends the cycle (see
// Schedule).
func (s *Scheduler) gangReserve(ctx context.Context, state *framework.CycleState, pod *corev1.Pod) (*framework.Status, time.Duration) {
	st := s.Gangs().Reserve(ctx, state.Policy, pod)
	if st.IsRejected() {
		return st, gangRecheck
	}
	return st, 0
}

// reservedNow returns the pod's reservation, for a gang member under the
// gang lock (see gang.Coordinator.Do).
func (s *Scheduler) reservedNow(policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod) (res cache.Reservation, held bool) {
	s.Gangs().Do(policy, pod, func() { res, held = s.Cache.Reserved(pod.UID) })
	return res, held
}

// gangHandle is the scheduler as the gang step sees it.
type gangHandle struct{ s *Scheduler }

var _ gang.Handle = gangHandle{}

func (h gangHandle) Reserved(uid types.UID) (string, string, bool) {
	res, ok := h.s.Cache.Reserved(uid)
	return res.Node, res.Policy, ok
}

func (h gangHandle) RecentlyBound(uid types.UID) bool { return h.s.Cache.RecentlyBound(uid) }

func (h gangHandle) Lock()   { h.s.Placer.Lock() }
func (h gangHandle) Unlock() { h.s.Placer.Unlock() }

func (h gangHandle) Place(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod, in sets.Set[string]) (string, error) {
	c, err := h.s.Placer.SelectNode(ctx, pod, policy, in)
	if err != nil {
		return "", err
	}
	if err := h.s.assume(ctx, c, pod, framework.NewCycleState(policy, pod), time.Time{}); err != nil {
		return "", err
	}
	return c.Node, nil
}

func (h gangHandle) Forget(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod) {
	h.s.forgetCycle(ctx, pod)
	h.s.releaseRecord(policy.Name, pod.UID)
	h.s.Cache.Unreserve(pod.UID, false)
}

func (h gangHandle) Record(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod, at time.Time) error {
	return h.RecordAll(ctx, policy, []*corev1.Pod{pod}, at)[0]
}

func (h gangHandle) RecordAll(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pods []*corev1.Pod, at time.Time) []error {
	errs := make([]error, len(pods))
	var (
		rs  []*bindgatev1alpha1.Reservation
		idx []int
	)
	for i, pod := range pods {
		res, ok := h.s.Cache.Reserved(pod.UID)
		if !ok {
			errs[i] = errors.New("the reservation is gone")
			continue
		}
		rs = append(rs, ledger.NewReservation(pod, res.Node, framework.PodRequests(pod).ResourceList(), at, nil))
		idx = append(idx, i)
	}
	if !h.s.Durability.MustRecord(policy) {
		return errs // held in memory: the members bind at once
	}
	for j, err := range h.s.Ledger.RecordAll(ctx, policy.Name, rs) {
		if err == nil {
			err = h.s.stillHeld(policy.Name, rs[j])
		}
		errs[idx[j]] = err
	}
	return errs
}

func (h gangHandle) Waiting(ctx context.Context, pod *corev1.Pod, msg string) {
	// A copy: the write decodes the pod it returns into the object given.
	if err := h.s.Conditions().Permitted(ctx, pod.DeepCopy(), corev1.ConditionFalse, bindgatev1alpha1.ReasonWaiting, msg); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Recording the gang wait", "pod", klog.KObj(pod))
	}
}

func (h gangHandle) ReleaseMember(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, m *corev1.Pod, msg string) {
	s := h.s
	res, _ := s.Cache.Reserved(m.UID)
	s.unreserve(ctx, framework.NewCycleState(policy, m), m, res.Node)
	if err := s.Conditions().Permitted(ctx, m, corev1.ConditionFalse, bindgatev1alpha1.ReasonTimeout, msg); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Recording the gang timeout", "pod", klog.KObj(m))
	}
	if permit.OnTimeout(policy) == bindgatev1alpha1.PermitTimeoutReject {
		s.holdAfterReject(m, policy)
		_ = s.Conditions().NotScheduled(ctx, m, corev1.PodReasonUnschedulable, msg)
	} else {
		s.holdAfterPermitTimeout(m.UID)
	}
	h.Wake(m)
}

func (h gangHandle) Wake(pod *corev1.Pod) {
	if h.s.Wake != nil {
		h.s.Wake(client.ObjectKeyFromObject(pod))
	}
}

// gangState is the scheduler's gang coordinator, made once.
type gangState struct {
	gangsOnce sync.Once
	gangs     *gang.Coordinator
}
