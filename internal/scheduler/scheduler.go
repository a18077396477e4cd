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

// Package scheduler runs one pod's binding cycle: Filter and Score (or the
// reservation it already holds), Reserve, Permit, PreBind, Bind and
// PostBind. Every step is resumable: the cycle is level-triggered from the
// pod, the cache and the ledger, so a restart continues where it stopped.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/ledger"
	"github.com/bindgate/bindgate/internal/metrics"
	"github.com/bindgate/bindgate/internal/placement"
	"github.com/bindgate/bindgate/internal/podcondition"
)

// Event reasons, as kube-scheduler uses them.
const (
	EventScheduled        = "Scheduled"
	EventFailedScheduling = podcondition.EventFailedScheduling
	EventNoPolicy         = "NoPolicy"
)

// Scheduler runs binding cycles. Its fields are set once at start.
type Scheduler struct {
	Client   client.Client
	Cache    *cache.Cache
	Ledger   *ledger.Ledger
	Recorder events.EventRecorder
	Clock    clock.Clock
	// Placer runs kube-scheduler's Filter, Score, Reserve and PreBind
	// plugins (with the policy's own) over the cache's snapshot.
	Placer *placement.Placer
	// PermitPlugins returns the permit plugins of a policy (none: approve).
	PermitPlugins func(*bindgatev1alpha1.BindingPolicy) []framework.PermitPlugin
	Binder        framework.BindPlugin
	// BindHook, when set, runs the policies' BindHooks (spec.bind.webhook) before the
	// gate patch.
	BindHook BindHook
	PostBind []framework.PostBindPlugin
	// Async, when set, runs binds on its pool of goroutines, apart from
	// the worker that reserved the pod.
	Async *AsyncBinder
	// Durability says which reservations are recorded in the policy's
	// status before the cycle goes on.
	Durability ledger.Durability
	// SoleReplica says no other replica schedules at the same time (leader
	// election): a reservation loaded from a policy's status (a restart) is
	// this process's to check again, release and bind.
	SoleReplica bool
	// UngateMethod is how the gate is lifted: a merge patch (the zero
	// value), or a whole-pod update when the API server is not newer than
	// this binary (bind.MethodFor).
	UngateMethod bind.Method
	// APIReader, when set, reads a pod from the API server when lifting
	// its gate conflicted: a write to its status only (DynamicResources'
	// PreBind records the claim of a DRA extended resource there) does not
	// send the pod back to a new cycle.
	APIReader client.Reader

	// Wake, when set, requeues a pod at once (members of a gang reserved
	// together).
	Wake func(types.NamespacedName)
	gangState

	// permitHolds maps a pod UID to its permitHold after a permit timeout:
	// the pod takes no new reservation before the hold ends, whatever
	// events requeue it.
	permitHolds sync.Map
	// unfitStreaks maps a pod UID to how many cycles in a row the guard
	// under Reserve refused the node the plugins chose (unfitAgain).
	unfitStreaks sync.Map
	// permitRetryLimiter counts permit timeouts in a row per pod (see
	// permitRetries).
	permitRetryLimiter workqueue.TypedRateLimiter[types.UID]
	permitRetriesOnce  sync.Once
	// clusterEpoch counts the changes that may let a rejected pod through
	// (see ClusterChanged).
	clusterEpoch atomic.Uint64

	// cycles maps a pod UID to the placement.Cycle of its reservation: the
	// plugins' state that Reserve, Unreserve and PreBind need again.
	cycles sync.Map
	// binding holds the UIDs of the pods whose bind (PreBind onwards) runs
	// now: Forget leaves their cycle to the bind.
	binding sync.Map
	// waits maps the UID of a pod waiting in Permit to the deadline its
	// PermitWaiting event announced: a new deadline (a new reservation) is
	// a new wait.
	waits sync.Map
}

// Result is the schedule_attempts_total result a cycle that ended with st
// counts under ("" for none: nothing was attempted, or the bind was handed to
// the AsyncBinder, which counts it when it ends).
func Result(st *framework.Status) string {
	switch st.Code() {
	case framework.Success:
		return metrics.ResultScheduled
	case framework.Wait:
		return metrics.ResultWaiting
	case framework.Unschedulable, framework.UnschedulableAndUnresolvable:
		return metrics.ResultUnschedulable
	case framework.Skip:
		return ""
	default: // Error, Pending
		return metrics.ResultError
	}
}

// retry ends a cycle at a change that is nobody's failure (a lost race, a
// node that filled up, a reservation let go): the pod is looked at again
// after the given delay, without backoff.
func retry(after time.Duration, reason string) (*framework.Status, time.Duration) {
	return framework.NewStatus(framework.Pending, reason), after
}

// Schedule runs or resumes pod's cycle under policy and says how it ended,
// kube-scheduler's way (a nil *Status is success), with when to look again
// (0: when an event requeues the pod):
//   - nil: the pod is bound;
//   - Skip: nothing more in this cycle: the bind was handed to the
//     AsyncBinder (it reports through its OnDone), is in flight already or
//     has ended (the pod read is older than its bind), or the pod's hold
//     after a permit timeout has not ended;
//   - Wait: the pod waits in Permit, for a bind hook or another gate;
//   - Unschedulable: it fits nowhere, a permit condition rejected it, or its
//     gang cannot be placed yet;
//   - Pending: the cycle stopped at a change that is nobody's failure (see
//     retry); look again after the delay, without backoff;
//   - Error: a failure (st.AsError()), retried with backoff.
func (s *Scheduler) Schedule(ctx context.Context, pod *corev1.Pod, policy *bindgatev1alpha1.BindingPolicy) (*framework.Status, time.Duration) {
	log := ctrl.LoggerFrom(ctx).WithValues("policy", policy.Name)
	ctx = ctrl.LoggerInto(ctx, log)
	if s.Async.Busy(pod.UID) {
		return framework.NewStatus(framework.Skip, "its bind is in flight"), 0 // the binder reports
	}
	// Checked after Busy: a bind marks the pod bound in the cache before it
	// stops being busy. A cycle that started on the informer's pod while
	// the bind was in flight may run on after the bind, still reading the
	// pod unbound: it must not place the pod again (DynamicResources'
	// PostFilter would delete the claim of its devices, as kube-scheduler's
	// queue never does for a pod it has assumed).
	if s.Cache.RecentlyBound(pod.UID) {
		return framework.NewStatus(framework.Skip, "bound; the informer has not shown the bind yet"), 0
	}
	state := framework.NewCycleState(policy, pod)

	res, held := s.reservedNow(policy, pod)
	if held && res.Policy != policy.Name {
		// Reserved under another policy (the pod's labels or the policies
		// changed): the reservation stays with its policy, unless that
		// policy was deleted: then the pod starts again under its match.
		released, err := s.ReleaseIfPolicyGone(ctx, pod, "matching the pod again: now BindingPolicy "+policy.Name)
		if err != nil {
			return framework.AsStatus(err), 0
		}
		if released {
			held = false
		} else {
			policy = s.policyByName(ctx, res.Policy, policy)
			state = framework.NewCycleState(policy, pod)
		}
	}
	// fresh: the reservation is taken in this call, on this snapshot; one
	// taken earlier (the pod waited, or a restart) is checked again before
	// the bind.
	fresh := false
	if !held {
		if wait := s.permitHoldOff(pod, policy); wait > 0 {
			return framework.NewStatus(framework.Skip, "held after a permit timeout"), wait
		}
		if st, after := s.gangReserve(ctx, state, pod); st != nil {
			return st, after
		}
		if res, held = s.Cache.Reserved(pod.UID); !held {
			if st, after := s.reserve(ctx, state, pod); st != nil {
				return st, after
			}
			res, _ = s.Cache.Reserved(pod.UID)
		}
		fresh = true
	}
	if !fresh {
		// A gang that lost a member while this one waited lets it go.
		if st := s.Gangs().Check(ctx, state.Policy, pod); !st.IsSuccess() {
			if !st.IsRejected() {
				return st, 0
			}
			log.V(2).Info("Releasing a gang member", "pod", klog.KObj(pod), "reason", st.Message())
			s.unreserve(ctx, state, pod, res.Node)
			return retry(time.Millisecond, "gang member released: "+st.Message())
		}
	}
	node, ok := s.Cache.Node(res.Node)
	if !ok {
		s.releaseGone(ctx, pod, res, fmt.Sprintf("Released the reservation on node %s: the node was deleted; choosing a node again", res.Node))
		return retry(time.Millisecond, "the reserved node was deleted")
	}

	// Permit.
	start := s.Clock.Now()
	if st, after := s.permit(ctx, state, pod, node); st != nil {
		return st, after
	}
	metrics.ExtensionPointDuration.WithLabelValues("Permit").Observe(s.Clock.Since(start).Seconds())

	// PreBind: the node must still exist, be schedulable, be tolerated and fit.
	start = s.Clock.Now()
	if st := s.preBind(ctx, state, pod, node, fresh); st != nil {
		if kept, after := s.keepOthersRecord(ctx, state, pod, res, st); kept != nil {
			return kept, after
		}
		log.V(2).Info("Node no longer fits the pod, choosing again", "pod", klog.KObj(pod), "node", node.Name, "reason", st.Message())
		s.unreserve(ctx, state, pod, node.Name)
		if res.Recorded {
			// The check took the reservation out of the cache, and with
			// it what said the record came from a policy event.
			s.Ledger.ReleaseSeen(state.Policy.Name, pod.UID)
		}
		return retry(time.Millisecond, "the node no longer fits: "+st.Message())
	}
	metrics.ExtensionPointDuration.WithLabelValues("PreBind").Observe(s.Clock.Since(start).Seconds())

	// Bind only when no other controller's gate remains: the API server
	// refuses to bind a gated pod. The pod's update requeues it.
	if others := bind.OtherGates(pod); len(others) > 0 {
		log.V(4).Info("Waiting for other scheduling gates", "pod", klog.KObj(pod), "gates", others)
		// A waiting pod's reservation must be durable (a no-op write when
		// it already is).
		if err := s.recordHeld(ctx, state.Policy.Name, pod, nil); err != nil {
			return framework.AsStatus(err), 0
		}
		return framework.NewStatus(framework.Wait, "waiting for other scheduling gates"), 0
	}
	return s.dispatchBind(ctx, state, pod, node)
}

func (s *Scheduler) policyByName(ctx context.Context, name string, fallback *bindgatev1alpha1.BindingPolicy) *bindgatev1alpha1.BindingPolicy {
	p := &bindgatev1alpha1.BindingPolicy{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
		return fallback
	}
	return p
}

// reserve runs kube-scheduler's PreFilter, Filter, PreScore and Score
// plugins, assumes the pod on the best node and runs the Reserve plugins,
// all in one scheduling cycle, then records the reservation durably when it
// must outlive the cycle. A non-nil *Status ends the cycle (see Schedule).
func (s *Scheduler) reserve(ctx context.Context, state *framework.CycleState, pod *corev1.Pod) (*framework.Status, time.Duration) {
	log := ctrl.LoggerFrom(ctx)
	start := s.Clock.Now()
	s.Placer.Lock()
	c, err := s.Placer.SelectNode(ctx, pod, state.Policy)
	metrics.ExtensionPointDuration.WithLabelValues("Filter").Observe(s.Clock.Since(start).Seconds())
	if err != nil {
		s.Placer.Unlock()
		var fe *placement.FitError
		if errors.As(err, &fe) || errors.Is(err, placement.ErrNoNodes) {
			return s.unschedulable(ctx, pod, err.Error())
		}
		return framework.AsStatus(fmt.Errorf("placing the pod: %w", err)), 0
	}
	start = s.Clock.Now()
	err = s.assume(ctx, c, pod, state, time.Time{})
	s.Placer.Unlock()
	var unfit *cache.UnfitError
	if errors.As(err, &unfit) {
		// The informer showed a pod on the node after the snapshot.
		msg := "the node filled up before Reserve: " + unfit.Error()
		if s.unfitAgain(pod.UID) {
			// Not a race: the plugins and the guard disagree. The pod
			// says why and backs off, rather than cycle every 10 ms.
			return s.unschedulable(ctx, pod, fmt.Sprintf("node %s: %s", c.Node, msg))
		}
		log.V(4).Info("Node filled up before Reserve, choosing again", "pod", klog.KObj(pod), "node", c.Node, "reason", unfit.Error())
		return retry(10*time.Millisecond, msg)
	}
	s.unfitStreaks.Delete(pod.UID)
	if errors.Is(err, cache.ErrBound) {
		// A stale read of a pod bound a moment ago: its update requeues it.
		return framework.NewStatus(framework.Skip, "the pod is bound"), 0
	}
	if errors.Is(err, cache.ErrDeleted) {
		// Deleted while this cycle ran: held now, nothing would release it.
		return framework.NewStatus(framework.Skip, "the pod was deleted"), 0
	}
	if errors.Is(err, cache.ErrRecorded) {
		// Another replica's record arrived while this cycle ran: the next
		// one goes on from it.
		return retry(time.Millisecond, err.Error())
	}
	if err != nil {
		return framework.AsStatus(fmt.Errorf("reserving node %s: %w", c.Node, err)), 0
	}
	if !s.Durability.MustRecord(state.Policy) {
		// Held in memory only: the pod binds at once. Should it wait
		// later (permit), Permit records it before reporting it waiting.
		metrics.ExtensionPointDuration.WithLabelValues("Reserve").Observe(s.Clock.Since(start).Seconds())
		return nil, 0
	}
	r := ledger.NewReservation(pod, c.Node, state.PodRequests.ResourceList(), s.Clock.Now(), nil)
	if err := s.record(ctx, state.Policy.Name, r); err != nil {
		s.forgetCycle(ctx, pod)
		s.Cache.Unreserve(pod.UID, false)
		// The write may have been applied all the same (answered 504, or
		// cut off after it reached the API server): the record must not
		// outlive the hold, even if the pod is deleted before its next
		// cycle records it again. One refused before the write was not:
		// the status may hold another replica's record of the pod there,
		// taken in the same second (the record's identity), and that one
		// is not this process's to release.
		if !errors.Is(err, ledger.ErrNotWritten) {
			s.Ledger.ReleaseRecord(state.Policy.Name, r)
		}
		if errors.Is(err, ledger.ErrLostRace) {
			return retry(time.Millisecond, err.Error())
		}
		return framework.AsStatus(fmt.Errorf("recording the reservation: %w", err)), 0
	}
	metrics.ExtensionPointDuration.WithLabelValues("Reserve").Observe(s.Clock.Since(start).Seconds())
	log.V(4).Info("Reserved", "pod", klog.KObj(pod), "node", c.Node)
	return nil, 0
}

// assume takes the reservation of c in the cache (the pod becomes an
// assumed pod on c.Node) and runs the Reserve plugins; on failure nothing is
// left held. The caller holds the Placer's lock.
func (s *Scheduler) assume(ctx context.Context, c *placement.Cycle, pod *corev1.Pod, state *framework.CycleState, reservedAt time.Time) error {
	// The cache keeps the cycle's assumed pod, which the Reserve and PreBind
	// plugins get too: one copy of the pod per reservation, as in
	// kube-scheduler.
	if err := s.Cache.Reserve(c.Assumed(pod), state.PodRequests, c.Node, state.Policy, reservedAt); err != nil {
		return err
	}
	if st := s.Placer.Reserve(ctx, c, pod); !st.IsSuccess() {
		s.Placer.Unreserve(ctx, c, pod)
		s.Cache.Unreserve(pod.UID, false)
		return fmt.Errorf("running the Reserve plugins: %w", st.AsError())
	}
	s.cycles.Store(pod.UID, c)
	return nil
}

// forgetCycle runs the Unreserve plugins of the pod's cycle, if any.
func (s *Scheduler) forgetCycle(ctx context.Context, pod *corev1.Pod) {
	if v, ok := s.cycles.LoadAndDelete(pod.UID); ok {
		s.Placer.Unreserve(ctx, v.(*placement.Cycle), pod)
	}
}

// unschedulable reports a pod that fits nowhere: event, PodScheduled=False.
func (s *Scheduler) unschedulable(ctx context.Context, pod *corev1.Pod, msg string) (*framework.Status, time.Duration) {
	ctrl.LoggerFrom(ctx).V(2).Info("Unable to schedule pod", "pod", klog.KObj(pod), "reason", msg)
	if err := s.Conditions().NotScheduled(ctx, pod, corev1.PodReasonUnschedulable, msg); err != nil {
		return framework.AsStatus(err), 0
	}
	return framework.NewStatus(framework.Unschedulable, msg), 0
}

// maxUnfitStreak is how many cycles in a row may see the guard under
// Reserve refuse the chosen node before the pod is marked unschedulable.
const maxUnfitStreak = 5

// unfitAgain counts a cycle whose chosen node the guard under Reserve
// refused, and says whether that made maxUnfitStreak in a row (the count
// starts again then). A node that filled up between the snapshot and
// Reserve is a race the next cycle wins; a streak means the plugins keep
// choosing a node the guard refuses.
func (s *Scheduler) unfitAgain(uid types.UID) bool {
	n := 1
	if v, ok := s.unfitStreaks.Load(uid); ok {
		n = v.(int) + 1
	}
	if n >= maxUnfitStreak {
		s.unfitStreaks.Delete(uid)
		return true
	}
	s.unfitStreaks.Store(uid, n)
	return false
}

// Conditions returns the writer of the pod conditions.
func (s *Scheduler) Conditions() *podcondition.Writer {
	return &podcondition.Writer{Client: s.Client, Clock: s.Clock, Recorder: s.Recorder}
}
