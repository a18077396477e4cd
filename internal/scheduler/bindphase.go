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
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/bindgate/bindgate/internal/placement"
)

// preBind checks, before the bind, that a reservation taken earlier (the
// pod waited in Permit, or it was loaded from a policy's status after a
// restart) still holds: the pod's own reservation is taken out and
// kube-scheduler's PreFilter and Filter plugins run for the node again, on
// the cluster as it is now; that also rebuilds the plugins' state a restart
// lost, so VolumeBinding's PreBind provisions the pod's claims. A
// reservation taken in this cycle needs no check: kube-scheduler binds on
// the same snapshot too.
//
// With several active replicas (no leader election), a reservation this
// process did not place may be another replica's, which may be binding it
// this very moment: it is refused when its node is overcommitted now, and
// otherwise kept in place (its capacity never looks free to other
// placements) while the filters run again (checkRecorded). It may also be
// this process's own, released a moment ago and read back from a status the
// release has not reached yet: bound unchecked, it went to nodes cordoned,
// deleted or moved out of the policy's nodeSelector while the pod waited
// (the fault suite's TestNodesGoWhilePodsWaitInPermit).
func (s *Scheduler) preBind(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node, fresh bool) *framework.Status {
	_, placedHere := s.cycles.Load(pod.UID)
	if placedHere && fresh {
		return nil
	}
	if !placedHere && !s.SoleReplica {
		if over := s.Cache.Overcommitted(node.Name); len(over) > 0 {
			return framework.NewStatus(framework.Unschedulable, "node overcommitted on "+strings.Join(over, ", "))
		}
		return s.checkRecorded(ctx, state, pod, node)
	}
	res, held := s.Cache.Reserved(pod.UID)
	if !held {
		return framework.NewStatus(framework.Unschedulable, "the reservation is gone")
	}
	s.Placer.Lock()
	defer s.Placer.Unlock()
	s.forgetCycle(ctx, pod)
	s.Cache.Unreserve(pod.UID, false)
	c, st := s.Placer.Check(ctx, pod, state.Policy, node.Name)
	if !st.IsSuccess() {
		return st
	}
	if err := s.assume(ctx, c, pod, state, res.ReservedAt); err != nil {
		return framework.AsStatus(err)
	}
	if res.Recorded {
		s.Cache.MarkRecorded(pod.UID)
	}
	return nil
}

// checkRecorded runs kube-scheduler's PreFilter and Filter plugins for a
// recorded reservation this process did not place: the reservation is taken
// out of the snapshot for the check and, when the node still takes the pod,
// held again as it was, all under the placer's lock (no placement sees its
// capacity free meanwhile).
func (s *Scheduler) checkRecorded(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node) *framework.Status {
	res, held := s.Cache.Reserved(pod.UID)
	if !held {
		return framework.NewStatus(framework.Unschedulable, "the reservation is gone")
	}
	s.Placer.Lock()
	defer s.Placer.Unlock()
	s.Cache.Unreserve(pod.UID, false)
	c, st := s.Placer.Check(ctx, pod, state.Policy, node.Name)
	if !st.IsSuccess() {
		return st
	}
	// Held again as it was, now with the plugins' state of this check: the
	// Reserve plugins run and PreBind will (VolumeBinding provisions the
	// pod's WaitForFirstConsumer claims for the node before the bind).
	if err := s.assume(ctx, c, pod, state, res.ReservedAt); err != nil {
		return framework.AsStatus(fmt.Errorf("holding the recorded reservation again: %w", err))
	}
	if res.Recorded {
		s.Cache.MarkRecorded(pod.UID)
	}
	return nil
}

// staleRecordGrace is how long past its permit deadline (or, for a pod not
// waiting in Permit, past the time it was taken) a reservation recorded by
// another replica is left to that replica: a live one binds or releases it
// long before.
const staleRecordGrace = 30 * time.Second

// keepOthersRecord decides, when PreBind refused a reservation this process
// did not place while other replicas may be active, whether its record
// stays. The record may be another replica's, which binds the pod whatever
// this process thinks of the node: taken out of the status, the capacity
// it holds would look free to this process (and to the check before its
// writes) until the bind shows, and two pods would share it. So a record the
// policy's status (read live) still holds stays held, counted and
// untouched, until it is stale (see staleRecordGrace: its replica is gone);
// the pod is looked at again meanwhile. A nil *Status: the record is gone
// (or stale, or this process's own: there is one replica), and the caller
// releases the reservation as it would any other.
func (s *Scheduler) keepOthersRecord(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, res cache.Reservation, refused *framework.Status) (*framework.Status, time.Duration) {
	if s.SoleReplica || !res.Recorded || s.APIReader == nil {
		return nil, 0
	}
	p := &bindgatev1alpha1.BindingPolicy{}
	if err := s.APIReader.Get(ctx, client.ObjectKey{Name: res.Policy}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, 0
		}
		// Unsure whether the record is there: keep it, look again.
		return framework.AsStatus(fmt.Errorf("reading BindingPolicy %s for the record of a refused reservation: %w", res.Policy, err)), 0
	}
	i := slices.IndexFunc(p.Status.Reservations, func(r bindgatev1alpha1.Reservation) bool { return r.PodUID == pod.UID })
	if i < 0 {
		return nil, 0
	}
	r := &p.Status.Reservations[i]
	until := r.ReservedAt.Time
	if r.PermitDeadline != nil && r.PermitDeadline.After(until) {
		until = r.PermitDeadline.Time
	}
	if s.Clock.Since(until) > staleRecordGrace {
		return nil, 0
	}
	// Counted again if the check took it out (it is this node's until its
	// replica binds or releases it).
	s.forgetCycle(ctx, pod)
	s.Cache.AddRecorded(res.Policy, r, func(*bindgatev1alpha1.Reservation) *corev1.Pod { return pod })
	msg := fmt.Sprintf("node %s no longer takes the pod (%s), but the reservation recorded there may be another replica's, "+
		"which binds or releases it: looking again", r.Node, refused.Message())
	ctrl.LoggerFrom(ctx).V(2).Info("Keeping a recorded reservation the node no longer fits", "pod", klog.KObj(pod), "node", r.Node, "reason", refused.Message())
	return retry(time.Second, msg)
}

// bind removes the gate, pins and binds the pod, then releases the
// reservation and runs PostBind. A nil *Status: the pod is bound (see
// Schedule).
func (s *Scheduler) bind(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node) (*framework.Status, time.Duration) {
	pod, took, st, after := s.ungate(ctx, state, pod, node)
	if st != nil {
		return st, after
	}
	return s.bindUngated(ctx, state, pod, node, took)
}

// ungate is the bind's first stage: the bind hook, PreBind and the gate's
// removal, which pins the pod to the node and records its reservation in
// it. A non-nil *Status ends the bind there (see Schedule); else the pod as
// the API server now has it and how long the gate's removal took are
// returned, and the pod counts as binding (Forget leaves it alone) until
// bindUngated ends.
func (s *Scheduler) ungate(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node) (*corev1.Pod, time.Duration, *framework.Status, time.Duration) {
	log := ctrl.LoggerFrom(ctx)
	if st, after := s.callBindHook(ctx, state, pod, node); st != nil {
		return pod, 0, st, after
	}
	s.binding.Store(pod.UID, struct{}{})
	end := func(st *framework.Status, after time.Duration) (*corev1.Pod, time.Duration, *framework.Status, time.Duration) {
		s.binding.Delete(pod.UID)
		return pod, 0, st, after
	}
	if v, ok := s.cycles.Load(pod.UID); ok {
		// VolumeBinding binds or provisions the pod's claims for the node.
		if st := s.Placer.PreBind(ctx, v.(*placement.Cycle), pod); !st.IsSuccess() {
			log.V(2).Info("PreBind failed, choosing again", "pod", klog.KObj(pod), "node", node.Name, "reason", st.Message())
			s.unreserve(ctx, state, pod, node.Name)
			return end(retry(time.Second, "PreBind: "+st.Message()))
		}
	}
	start := s.Clock.Now()
	err := bind.Ungate(ctx, s.Client, pod, node, state.Policy.Name, s.UngateMethod)
	if apierrors.IsConflict(err) {
		if fresh := s.statusOnlyChange(ctx, pod); fresh != nil {
			log.V(4).Info("Only the pod's status changed, lifting the gate again", "pod", klog.KObj(pod), "resourceVersion", fresh.ResourceVersion)
			pod = fresh
			err = bind.Ungate(ctx, s.Client, pod, node, state.Policy.Name, s.UngateMethod)
		}
	}
	if err != nil {
		if apierrors.IsConflict(err) {
			// The pod changed (another replica, or the user): look again.
			return end(retry(20*time.Millisecond, "the pod changed before its gate was lifted"))
		}
		if apierrors.IsNotFound(err) {
			s.unreserve(ctx, state, pod, node.Name)
			return end(retry(0, "the pod was deleted"))
		}
		return end(framework.AsStatus(err), 0)
	}
	return pod, s.Clock.Since(start), nil, 0
}

// bindUngated is the bind's second stage, after ungate: the pod is bound
// through pods/binding, its reservation released, the Scheduled event
// written and PostBind run. ungateTook is how long the gate's removal took
// (the binding duration metrics count both writes, not the wait between).
func (s *Scheduler) bindUngated(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node, ungateTook time.Duration) (*framework.Status, time.Duration) {
	log := ctrl.LoggerFrom(ctx)
	defer s.binding.Delete(pod.UID)
	start := s.Clock.Now()
	if st := s.Binder.Bind(ctx, state, pod, node.Name); st != nil {
		s.unreserve(ctx, state, pod, node.Name)
		if st.Code() == framework.UnschedulableAndUnresolvable {
			log.V(2).Info("Pod was bound elsewhere", "pod", klog.KObj(pod), "reason", st.Message())
			return retry(0, "the pod was bound elsewhere: "+st.Message())
		}
		if apierrors.IsNotFound(st.AsError()) {
			// Deleted after its gate was lifted (it may have waited in
			// the queue for a bind goroutine).
			return retry(0, "the pod was deleted")
		}
		return st, 0
	}
	took := (ungateTook + s.Clock.Since(start)).Seconds()
	metrics.BindingDuration.Observe(took)
	metrics.ExtensionPointDuration.WithLabelValues("Bind").Observe(took)
	s.cycles.Delete(pod.UID)
	s.waits.Delete(pod.UID)
	s.releaseRecord(state.Policy.Name, pod.UID)
	s.Cache.Unreserve(pod.UID, true)
	// As kube-scheduler writes it: no related object (the node is in the
	// note), so the one event every bound pod gets is no larger than its.
	s.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, EventScheduled, "Binding",
		"Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node.Name)
	log.V(2).Info("Bound pod", "pod", klog.KObj(pod), "node", node.Name)
	for _, p := range s.PostBind {
		p.PostBind(ctx, state, pod, node.Name)
	}
	return nil, 0
}

// statusOnlyChange reads pod from the API server after lifting its gate
// conflicted, and returns what it read when nothing but its status (and
// bookkeeping such as resourceVersion and managedFields) differs from the
// pod this cycle placed; nil otherwise, or when the read fails. Its spec,
// labels and annotations — what placement, the policy match and the permit
// conditions read — must be the same: any other change sends the pod back
// to a new cycle.
func (s *Scheduler) statusOnlyChange(ctx context.Context, pod *corev1.Pod) *corev1.Pod {
	if s.APIReader == nil {
		return nil
	}
	fresh := &corev1.Pod{}
	if err := s.APIReader.Get(ctx, client.ObjectKeyFromObject(pod), fresh); err != nil {
		ctrl.LoggerFrom(ctx).V(4).Info("Reading the pod again failed", "pod", klog.KObj(pod), "err", err)
		return nil
	}
	if fresh.UID != pod.UID || fresh.DeletionTimestamp != nil ||
		!equality.Semantic.DeepEqual(fresh.Spec, pod.Spec) ||
		!equality.Semantic.DeepEqual(fresh.Labels, pod.Labels) ||
		!equality.Semantic.DeepEqual(fresh.Annotations, pod.Annotations) {
		return nil
	}
	return fresh
}

// unreserve releases the pod's reservation in memory and in the ledger.
func (s *Scheduler) unreserve(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node string) {
	ctrl.LoggerFrom(ctx).V(4).Info("Unreserve", "pod", klog.KObj(pod), "node", node)
	s.forgetCycle(ctx, pod)
	s.waits.Delete(pod.UID)
	s.releaseRecord(state.Policy.Name, pod.UID)
	s.Cache.Unreserve(pod.UID, false)
}

// releaseRecord takes the pod's reservation out of the policy's status,
// with ledger.ReleaseSeen when it was counted from a policy event (a status
// the ledger may not have read: another replica's record, or this
// process's before a restart). Call it before the cache lets the
// reservation go.
func (s *Scheduler) releaseRecord(policy string, uid types.UID) {
	if res, held := s.Cache.Reserved(uid); held && res.Recorded {
		s.Ledger.ReleaseSeen(policy, uid)
		return
	}
	s.Ledger.Release(policy, uid)
}

// recordHeld makes the reservation the pod holds durable, with the permit
// deadline when it waits in Permit. Recording an entry that is already there
// unchanged writes nothing.
func (s *Scheduler) recordHeld(ctx context.Context, policy string, pod *corev1.Pod, deadline *metav1.Time) error {
	res, held := s.Cache.Reserved(pod.UID)
	if !held {
		return nil
	}
	r := ledger.NewReservation(pod, res.Node, framework.PodRequests(pod).ResourceList(), res.ReservedAt, deadline)
	if err := s.record(ctx, policy, r); err != nil {
		return fmt.Errorf("recording the reservation of a waiting pod: %w", err)
	}
	return nil
}

// record makes a reservation durable. A pod deleted (or its reservation
// released) while the write was on its way must not leave the record
// behind: the release the deletion caused may have gone first. The record
// is released again then, and the write reported as a lost race.
func (s *Scheduler) record(ctx context.Context, policy string, r *bindgatev1alpha1.Reservation) error {
	if err := s.Ledger.Record(ctx, policy, r); err != nil {
		return err
	}
	return s.stillHeld(policy, r)
}

// stillHeld checks, after r was recorded, that its reservation is still
// held; else the record is released again and the write reported as a lost
// race (see record).
func (s *Scheduler) stillHeld(policy string, r *bindgatev1alpha1.Reservation) error {
	if res, held := s.Cache.Reserved(r.PodUID); !held || res.Policy != policy {
		s.Ledger.Release(policy, r.PodUID)
		return fmt.Errorf("%w: the reservation of %s/%s was released while it was recorded", ledger.ErrLostRace, r.PodNamespace, r.PodName)
	}
	return nil
}
