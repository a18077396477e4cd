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

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/bindgate/bindgate/internal/dryrun"
	"github.com/bindgate/bindgate/internal/eventhandlers"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/metrics"
	"github.com/bindgate/bindgate/internal/policy"
	"github.com/bindgate/bindgate/internal/queue"
	"github.com/bindgate/bindgate/internal/scheduler"
)

// PodReconciler runs the binding cycle for the pods bindgate is
// responsible for (eventhandlers.Handlers.Responsible): it finds the pod's
// policy, hands the pod to the scheduler and puts it back in the queue by
// the outcome.
type PodReconciler struct {
	client.Client
	Scheduler *scheduler.Scheduler
	Queue     *queue.Queue
	Handlers  *eventhandlers.Handlers
	// Loaded is closed once the ledger's recorded reservations are in the
	// cache: no cycle runs before, so none double-books.
	Loaded  <-chan struct{}
	Workers int
	// DryRun records what DryRun policies would do with the pods it sees.
	DryRun *dryrun.Recorder
}

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;update;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch;update
// +kubebuilder:rbac:groups="",resources=pods/binding,verbs=create
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile runs or resumes one pod's binding cycle.
func (r *PodReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	select {
	case <-r.Loaded:
	case <-ctx.Done():
		return ctrl.Result{}, ctx.Err()
	}
	pod := &corev1.Pod{}
	if err := r.Get(ctx, req.NamespacedName, pod); err != nil {
		r.Queue.Forget(req.NamespacedName, "")
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.Handlers.Responsible(pod) {
		r.Queue.Forget(req.NamespacedName, pod.UID)
		return ctrl.Result{}, nil
	}
	r.Queue.Seen(pod.UID)

	pol, reason, why, err := policy.Find(ctx, r, pod)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.setMatched(ctx, pod, pol, reason, why); err != nil {
		return ctrl.Result{}, err
	}
	if _, held := r.Scheduler.Cache.Reserved(pod.UID); r.DryRun != nil && !held {
		// What the DryRun policies that would take the pod would do: once
		// per pod and policy, before its own policy places it.
		takenBy := ""
		if pol != nil {
			takenBy = pol.Name
		}
		r.DryRun.Observe(ctx, pod, takenBy)
	}
	if pol == nil {
		// A reservation held by a policy since deleted or not Ready is
		// released (with an event); the pod waits like any unmatched pod.
		if _, err := r.Scheduler.ReleaseIfPolicyGone(ctx, pod, "the pod waits for a Ready BindingPolicy that selects it"); err != nil {
			return ctrl.Result{}, err
		}
		r.Queue.MarkUnschedulable(req.NamespacedName)
		return ctrl.Result{}, nil
	}

	host, pinned := pinnedByUs(pod)
	if pinned {
		gone, err := r.pinnedNodeGone(ctx, host)
		if err != nil {
			return ctrl.Result{}, err
		}
		if gone {
			return ctrl.Result{}, r.recoverStranded(ctx, pod, fmt.Sprintf("it is pinned to node %s, which no longer exists", host))
		}
	}

	st, after := r.Scheduler.Schedule(ctx, pod, pol)
	if res := scheduler.Result(st); res != "" {
		metrics.ScheduleAttempts.WithLabelValues(res, pol.Name).Inc()
	}
	switch st.Code() {
	case framework.Success:
		r.bound(pod)
		return ctrl.Result{}, nil
	case framework.Unschedulable, framework.UnschedulableAndUnresolvable:
		// Stranded only when the pinned node itself refuses the pod: one
		// that waits for something else (its gang to form again after a
		// failed bind) may still bind there.
		if pinned && r.Queue.Attempts(pod.UID) >= strandedAttempts && r.Scheduler.FitsOn(ctx, pod, pol, host).IsRejected() {
			return ctrl.Result{}, r.recoverStranded(ctx, pod, fmt.Sprintf("it is pinned to node %s, where it no longer fits", host))
		}
		r.Queue.MarkUnschedulable(req.NamespacedName)
		backoff := r.Queue.Backoff(pod.UID)
		if after <= 0 || after > backoff {
			after = backoff // after: e.g. a gang's recheck
		}
		return ctrl.Result{RequeueAfter: after}, nil
	case framework.Wait:
		// Waiting in Permit: node and policy changes may change the answer.
		r.Queue.MarkUnschedulable(req.NamespacedName)
		return ctrl.Result{RequeueAfter: after}, nil
	case framework.Skip, framework.Pending:
		ctrl.LoggerFrom(ctx).V(4).Info("Cycle stopped", "pod", klog.KObj(pod), "status", st.Code().String(), "reason", st.Message(), "requeueAfter", after)
		return ctrl.Result{RequeueAfter: after}, nil
	default:
		err := st.AsError()
		ctrl.LoggerFrom(ctx).Error(err, "Binding cycle failed", "pod", klog.KObj(pod))
		return ctrl.Result{}, err
	}
}

// bound records a bound pod's scheduling duration and forgets it.
func (r *PodReconciler) bound(pod *corev1.Pod) {
	if since, ok := r.Queue.Done(pod); ok {
		metrics.SchedulingDuration.Observe(since.Seconds())
	}
}

// bindDone is called when an asynchronous bind ends: a pod that did not
// bind is requeued (after the delay the cycle asked for, else with backoff).
func (r *PodReconciler) bindDone(pod *corev1.Pod, policy string, st *framework.Status, after time.Duration) {
	if res := scheduler.Result(st); res != "" {
		metrics.ScheduleAttempts.WithLabelValues(res, policy).Inc()
	}
	if st.IsSuccess() {
		r.bound(pod)
		return
	}
	if st.Code() == framework.Error {
		ctrl.Log.WithName("bind").Error(st.AsError(), "Bind failed", "pod", klog.KObj(pod))
		after = 0
	}
	if after <= 0 {
		after = r.Queue.Backoff(pod.UID)
	}
	r.Queue.Add(client.ObjectKeyFromObject(pod), queue.Priority(pod), after)
}

// SetupWithManager registers the controller: pods enter the queue by their
// informer events and by the queue's own adds.
func (r *PodReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("pod").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers, UsePriorityQueue: new(true)}).
		WatchesRawSource(source.Kind(mgr.GetCache(), client.Object(&corev1.Pod{}), queue.Handler(r.Handlers.Responsible))).
		WatchesRawSource(r.Queue.Source()).
		Complete(r)
}
