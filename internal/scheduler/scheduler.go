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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
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
	"github.com/bindgate/bindgate/internal/permit"
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
	// BindWebhook, when set, runs the policies' bind webhooks before the
	// gate patch.
	BindWebhook BindWebhook
	PostBind    []framework.PostBindPlugin
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

	// Wake, when set, requeues a pod at once (members of a gang reserved
	// together).
	Wake func(types.NamespacedName)
	gangState

	// permitHolds maps a pod UID to its permitHold after a permit timeout:
	// the pod takes no new reservation before the hold ends, whatever
	// events requeue it.
	permitHolds sync.Map
	// clusterEpoch counts the changes that may let a rejected pod through
	// (see ClusterChanged).
	clusterEpoch atomic.Uint64

	// cycles maps a pod UID to the placement.Cycle of its reservation: the
	// plugins' state that Reserve, Unreserve and PreBind need again.
	cycles sync.Map
	// waits maps the UID of a pod waiting in Permit to the deadline its
	// PermitWaiting event announced: a new deadline (a new reservation) is
	// a new wait.
	waits sync.Map
}

// Outcome tells the controller what happened and when to look again.
type Outcome struct {
	// Result is one of the metrics.Result* values.
	Result string
	// RequeueAfter > 0 asks for another cycle then.
	RequeueAfter time.Duration
	// Unschedulable marks a pod that waits for the cluster to change.
	Unschedulable bool
	// Node is the node the pod was bound to.
	Node string
}

// Schedule runs or resumes pod's cycle under policy.
func (s *Scheduler) Schedule(ctx context.Context, pod *corev1.Pod, policy *bindgatev1alpha1.BindingPolicy) (Outcome, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("policy", policy.Name)
	ctx = ctrl.LoggerInto(ctx, log)
	if s.Async.Busy(pod.UID) {
		return Outcome{}, nil // its bind is in flight and will report
	}
	state := framework.NewCycleState(policy, pod)

	res, held := s.reservedNow(policy, pod)
	if held && res.Policy != policy.Name {
		// Reserved under another policy (the pod's labels or the policies
		// changed): the reservation stays with its policy, unless that
		// policy was deleted: then the pod starts again under its match.
		released, err := s.ReleaseIfPolicyGone(ctx, pod, "matching the pod again: now BindingPolicy "+policy.Name)
		if err != nil {
			return Outcome{Result: metrics.ResultError}, err
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
			return Outcome{RequeueAfter: wait}, nil
		}
		if out, done, err := s.gangReserve(ctx, state, pod); done || err != nil {
			return out, err
		}
		if res, held = s.Cache.Reserved(pod.UID); !held {
			out, err := s.reserve(ctx, state, pod)
			if err != nil || out.Result != "" {
				return out, err
			}
			res, _ = s.Cache.Reserved(pod.UID)
		}
		fresh = true
	}
	if !fresh {
		// A gang that lost a member while this one waited lets it go.
		if st := s.Gangs().Check(ctx, state.Policy, pod); !st.IsSuccess() {
			if !st.IsRejected() {
				return Outcome{Result: metrics.ResultError}, st.AsError()
			}
			log.V(2).Info("Releasing a gang member", "pod", klog.KObj(pod), "reason", st.Message())
			s.unreserve(ctx, state, pod, res.Node)
			return Outcome{Result: metrics.ResultError, RequeueAfter: time.Millisecond}, nil
		}
	}
	node, ok := s.Cache.Node(res.Node)
	if !ok {
		s.releaseGone(ctx, pod, res, fmt.Sprintf("Released the reservation on node %s: the node was deleted; choosing a node again", res.Node))
		return Outcome{Result: metrics.ResultError, RequeueAfter: time.Millisecond}, nil
	}

	// Permit.
	start := s.Clock.Now()
	if out, done := s.permit(ctx, state, pod, node); done {
		return out, nil
	}
	metrics.ExtensionPointDuration.WithLabelValues("Permit").Observe(s.Clock.Since(start).Seconds())

	// PreBind: the node must still exist, be schedulable, be tolerated and fit.
	start = s.Clock.Now()
	if st := s.preBind(ctx, state, pod, node, fresh); st != nil {
		log.V(2).Info("Node no longer fits the pod, choosing again", "pod", klog.KObj(pod), "node", node.Name, "reason", st.Message())
		s.unreserve(ctx, state, pod, node.Name)
		return Outcome{Result: metrics.ResultError, RequeueAfter: time.Millisecond}, nil
	}
	metrics.ExtensionPointDuration.WithLabelValues("PreBind").Observe(s.Clock.Since(start).Seconds())

	// Bind only when no other controller's gate remains: the API server
	// refuses to bind a gated pod. The pod's update requeues it.
	if others := bind.OtherGates(pod); len(others) > 0 {
		log.V(4).Info("Waiting for other scheduling gates", "pod", klog.KObj(pod), "gates", others)
		// A waiting pod's reservation must be durable (a no-op write when
		// it already is).
		if err := s.recordHeld(ctx, state.Policy.Name, pod, nil); err != nil {
			return Outcome{Result: metrics.ResultError}, err
		}
		return Outcome{Result: metrics.ResultWaiting}, nil
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
// must outlive the cycle. A non-empty Outcome.Result ends the cycle.
func (s *Scheduler) reserve(ctx context.Context, state *framework.CycleState, pod *corev1.Pod) (Outcome, error) {
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
		return Outcome{Result: metrics.ResultError}, fmt.Errorf("placing the pod: %w", err)
	}
	start = s.Clock.Now()
	err = s.assume(ctx, c, pod, state, time.Time{})
	s.Placer.Unlock()
	var unfit *cache.UnfitError
	if errors.As(err, &unfit) {
		// The informer showed a pod on the node after the snapshot.
		log.V(4).Info("Node filled up before Reserve, choosing again", "pod", klog.KObj(pod), "node", c.Node, "reason", unfit.Error())
		return Outcome{Result: metrics.ResultError, RequeueAfter: 10 * time.Millisecond}, nil
	}
	if errors.Is(err, cache.ErrBound) {
		return Outcome{}, nil // a stale read of a pod bound a moment ago
	}
	if err != nil {
		return Outcome{Result: metrics.ResultError, RequeueAfter: 100 * time.Millisecond}, fmt.Errorf("reserving node %s: %w", c.Node, err)
	}
	if !s.Durability.MustRecord(state.Policy) {
		// Held in memory only: the pod binds at once. Should it wait
		// later (permit), Permit records it before reporting it waiting.
		metrics.ExtensionPointDuration.WithLabelValues("Reserve").Observe(s.Clock.Since(start).Seconds())
		return Outcome{}, nil
	}
	r := ledger.NewReservation(pod, c.Node, state.PodRequests.ResourceList(), s.Clock.Now(), nil)
	if err := s.record(ctx, state.Policy.Name, r); err != nil {
		s.forgetCycle(ctx, pod)
		s.Cache.Unreserve(pod.UID, false)
		if errors.Is(err, ledger.ErrLostRace) {
			return Outcome{Result: metrics.ResultError, RequeueAfter: time.Millisecond}, nil
		}
		return Outcome{Result: metrics.ResultError}, fmt.Errorf("recording the reservation: %w", err)
	}
	metrics.ExtensionPointDuration.WithLabelValues("Reserve").Observe(s.Clock.Since(start).Seconds())
	log.V(4).Info("Reserved", "pod", klog.KObj(pod), "node", c.Node)
	return Outcome{}, nil
}

// assume takes the reservation of c in the cache (the pod becomes an
// assumed pod on c.Node) and runs the Reserve plugins; on failure nothing is
// left held. The caller holds the Placer's lock.
func (s *Scheduler) assume(ctx context.Context, c *placement.Cycle, pod *corev1.Pod, state *framework.CycleState, reservedAt time.Time) error {
	if err := s.Cache.Reserve(pod, state.PodRequests, c.Node, state.Policy, reservedAt); err != nil {
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
func (s *Scheduler) unschedulable(ctx context.Context, pod *corev1.Pod, msg string) (Outcome, error) {
	ctrl.LoggerFrom(ctx).V(2).Info("Unable to schedule pod", "pod", klog.KObj(pod), "reason", msg)
	if err := s.Conditions().NotScheduled(ctx, pod, corev1.PodReasonUnschedulable, msg); err != nil {
		return Outcome{Result: metrics.ResultError}, err
	}
	return Outcome{Result: metrics.ResultUnschedulable, Unschedulable: true}, nil
}

// Conditions returns the writer of the pod conditions.
func (s *Scheduler) Conditions() *podcondition.Writer {
	return &podcondition.Writer{Client: s.Client, Clock: s.Clock, Recorder: s.Recorder}
}

// Event reasons of the permit phase.
const (
	EventPermitWaiting  = "PermitWaiting"
	EventPermitRejected = "PermitRejected"
	EventPermitTimeout  = "PermitTimeout"
)

// permit runs the policy's permit plugins. done=true ends the cycle here.
//
// The pod's permit deadline is its reservation's reservedAt plus the
// policy's permit timeout; every wait ends by the deadline at the latest, so
// the requeue timer enforces it. A pod that starts waiting has the deadline
// recorded in the ledger (status.waitingPods counts it) before it is
// reported waiting through the Permitted condition and a PermitWaiting event.
func (s *Scheduler) permit(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node) (Outcome, bool) {
	if s.PermitPlugins == nil {
		return Outcome{}, false
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
		return Outcome{}, false
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
			return Outcome{Result: metrics.ResultUnschedulable, Unschedulable: true}, true
		}
	}
	now := s.Clock.Now()
	if len(pending) == 0 {
		s.permitHolds.Delete(pod.UID)
		s.observePermit(policy, metrics.PermitAllowed, reservedAt)
		msg := "All permit conditions approved"
		if len(notes) > 0 {
			msg += "; " + strings.Join(notes, "; ")
		}
		if err := s.Conditions().Permitted(ctx, pod, corev1.ConditionTrue, bindgatev1alpha1.ReasonPermitted, msg); err != nil {
			log.Error(err, "Recording the permit approval", "pod", klog.KObj(pod))
		}
		return Outcome{}, false
	}
	msg := strings.Join(pending, "; ")
	if !now.Before(deadline) {
		return s.permitTimeout(ctx, state, pod, node, msg, reservedAt), true
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
				return Outcome{Result: metrics.ResultError, RequeueAfter: time.Millisecond}, true
			}
			log.Error(err, "Recording the permit deadline", "pod", klog.KObj(pod))
			return Outcome{Result: metrics.ResultError, RequeueAfter: 100 * time.Millisecond}, true
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
	return Outcome{Result: metrics.ResultWaiting, RequeueAfter: waitFor}, true
}

// permitTimeout ends a wait whose deadline passed: the reservation is
// released and the pod is either marked unschedulable until something that
// may change the answer changes (Reject) or requeued with backoff (Retry).
func (s *Scheduler) permitTimeout(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node, pending string, reservedAt time.Time) Outcome {
	policy := state.Policy
	action := permit.OnTimeout(policy)
	msg := fmt.Sprintf("permit timeout (%s) waiting for: %s", permit.Timeout(policy), pending)
	s.unreserve(ctx, state, pod, node.Name)
	s.Gangs().Release(ctx, state.Policy, pod)
	s.observePermit(policy, metrics.PermitTimeout, reservedAt)
	s.Recorder.Eventf(pod, node, corev1.EventTypeWarning, EventPermitTimeout, "Permit", "%s (onTimeout: %s)", msg, action)
	if err := s.Conditions().Permitted(ctx, pod, corev1.ConditionFalse, bindgatev1alpha1.ReasonTimeout, msg); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Recording the permit timeout", "pod", klog.KObj(pod))
	}
	// The pod takes no new reservation before its hold ends, even when
	// the condition and event writes above requeue it at once.
	if action == bindgatev1alpha1.PermitTimeoutRetry {
		return Outcome{Result: metrics.ResultWaiting, RequeueAfter: s.holdAfterPermitTimeout(pod.UID)}
	}
	hold := s.holdAfterReject(pod, policy)
	_ = s.Conditions().NotScheduled(ctx, pod, corev1.PodReasonUnschedulable, msg)
	return Outcome{Result: metrics.ResultUnschedulable, Unschedulable: true, RequeueAfter: hold}
}

func (s *Scheduler) observePermit(policy *bindgatev1alpha1.BindingPolicy, result string, reservedAt time.Time) {
	metrics.PermitWaitDuration.WithLabelValues(result, policy.Name).Observe(s.Clock.Since(reservedAt).Seconds())
}

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
	if _, st := s.Placer.Check(ctx, pod, state.Policy, node.Name); !st.IsSuccess() {
		return st
	}
	if err := s.Cache.Reserve(pod, state.PodRequests, res.Node, state.Policy, res.ReservedAt); err != nil {
		return framework.AsStatus(fmt.Errorf("holding the recorded reservation again: %w", err))
	}
	return nil
}

// bind removes the gate, pins and binds the pod, then releases the
// reservation and runs PostBind.
func (s *Scheduler) bind(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node) (Outcome, error) {
	log := ctrl.LoggerFrom(ctx)
	if out, done := s.callBindWebhook(ctx, state, pod, node); done {
		return out, nil
	}
	if v, ok := s.cycles.Load(pod.UID); ok {
		// VolumeBinding binds or provisions the pod's claims for the node.
		if st := s.Placer.PreBind(ctx, v.(*placement.Cycle), pod); !st.IsSuccess() {
			log.V(2).Info("PreBind failed, choosing again", "pod", klog.KObj(pod), "node", node.Name, "reason", st.Message())
			s.unreserve(ctx, state, pod, node.Name)
			return Outcome{Result: metrics.ResultError, RequeueAfter: time.Second}, nil
		}
	}
	start := s.Clock.Now()
	if err := bind.Ungate(ctx, s.Client, pod, node, state.Policy.Name, s.UngateMethod); err != nil {
		if apierrors.IsConflict(err) {
			// The pod changed (another replica, or the user): look again.
			return Outcome{Result: metrics.ResultError, RequeueAfter: 20 * time.Millisecond}, nil
		}
		if apierrors.IsNotFound(err) {
			s.unreserve(ctx, state, pod, node.Name)
			return Outcome{Result: metrics.ResultError}, nil
		}
		return Outcome{Result: metrics.ResultError}, err
	}
	if st := s.Binder.Bind(ctx, state, pod, node.Name); st != nil {
		s.unreserve(ctx, state, pod, node.Name)
		if st.Code() == framework.UnschedulableAndUnresolvable {
			log.V(2).Info("Pod was bound elsewhere", "pod", klog.KObj(pod), "reason", st.Message())
			return Outcome{Result: metrics.ResultError}, nil
		}
		return Outcome{Result: metrics.ResultError}, st.AsError()
	}
	metrics.BindingDuration.Observe(s.Clock.Since(start).Seconds())
	metrics.ExtensionPointDuration.WithLabelValues("Bind").Observe(s.Clock.Since(start).Seconds())
	s.cycles.Delete(pod.UID)
	s.waits.Delete(pod.UID)
	s.Cache.Unreserve(pod.UID, true)
	s.Ledger.Release(state.Policy.Name, pod.UID)
	s.Recorder.Eventf(pod, node, corev1.EventTypeNormal, EventScheduled, "Binding",
		"Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node.Name)
	log.V(2).Info("Bound pod", "pod", klog.KObj(pod), "node", node.Name)
	for _, p := range s.PostBind {
		p.PostBind(ctx, state, pod, node.Name)
	}
	return Outcome{Result: metrics.ResultScheduled, Node: node.Name}, nil
}

// unreserve releases the pod's reservation in memory and in the ledger.
func (s *Scheduler) unreserve(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node string) {
	ctrl.LoggerFrom(ctx).V(4).Info("Unreserve", "pod", klog.KObj(pod), "node", node)
	s.forgetCycle(ctx, pod)
	s.waits.Delete(pod.UID)
	s.Cache.Unreserve(pod.UID, false)
	s.Ledger.Release(state.Policy.Name, pod.UID)
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
	if res, held := s.Cache.Reserved(r.PodUID); !held || res.Policy != policy {
		s.Ledger.Release(policy, r.PodUID)
		return fmt.Errorf("%w: the reservation of %s/%s was released while it was recorded", ledger.ErrLostRace, r.PodNamespace, r.PodName)
	}
	return nil
}
