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
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/ledger"
	"github.com/bindgate/bindgate/internal/metrics"
	"github.com/bindgate/bindgate/internal/permit"
	"github.com/bindgate/bindgate/internal/policy"
	"github.com/bindgate/bindgate/internal/scheduler"
)

// PodReconciler runs the binding cycle for unbound pods that carry the gate
// scheduling.bindgate.dev/gate, name schedulerName bindgate, or hold a
// reservation.
type PodReconciler struct {
	client.Client
	Scheduler *scheduler.Scheduler
	Cache     *cache.Cache
	Ledger    *ledger.Ledger
	Clock     clock.Clock
	Workers   int

	// loaded is closed once reservations recorded in the policies' status
	// are loaded into the cache: no cycle runs before, so none double-books.
	loaded chan struct{}

	mu sync.Mutex
	// waiting are pods that wait for the cluster to change (unschedulable,
	// or no policy); events that may help requeue them.
	waiting   map[types.NamespacedName]struct{}
	firstSeen map[types.UID]time.Time
	attempts  map[types.UID]int

	// queue is the controller's workqueue, captured when the controller
	// starts: requeues from outside Reconcile (a bind that did not bind,
	// wake-ups) go straight into it, deduplicated and never dropped.
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;update;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch;update
// +kubebuilder:rbac:groups="",resources=pods/binding,verbs=create
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// wantsCycle says whether pod is one bindgate schedules.
func (r *PodReconciler) wantsCycle(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || r.Cache.RecentlyBound(pod.UID) {
		return false
	}
	if bind.HasGate(pod) || pod.Spec.SchedulerName == bindgatev1alpha1.SchedulerName {
		return true
	}
	if _, ungatedByUs := bind.SealedPolicy(pod); ungatedByUs {
		return true // ungated and pinned, but the bind did not happen (restart)
	}
	_, held := r.Cache.Reserved(pod.UID)
	return held
}

// Reconcile runs or resumes one pod's binding cycle.
func (r *PodReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	select {
	case <-r.loaded:
	case <-ctx.Done():
		return ctrl.Result{}, ctx.Err()
	}
	pod := &corev1.Pod{}
	if err := r.Get(ctx, req.NamespacedName, pod); err != nil {
		r.forget(req.NamespacedName, "")
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.wantsCycle(pod) {
		r.forget(req.NamespacedName, pod.UID)
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	r.seen(pod.UID)

	pol, err := r.matchPolicy(ctx, pod)
	if err != nil {
		return ctrl.Result{}, err
	}
	if pol == nil {
		// A reservation held by a policy since deleted or not Ready is
		// released (with an event); the pod waits like any unmatched pod.
		if _, err := r.Scheduler.ReleaseIfPolicyGone(ctx, pod, "the pod waits for a Ready BindingPolicy that selects it"); err != nil {
			return ctrl.Result{}, err
		}
		r.markWaiting(req.NamespacedName)
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

	out, err := r.Scheduler.Schedule(ctx, pod, pol)
	if out.Result != "" && out.Result != scheduler.ResultBinding {
		metrics.ScheduleAttempts.WithLabelValues(out.Result, pol.Name).Inc()
	}
	if err != nil {
		log.Error(err, "Binding cycle failed", "pod", klog.KObj(pod))
		return ctrl.Result{}, err
	}
	switch {
	case out.Result == scheduler.ResultBinding:
		return ctrl.Result{}, nil // bindDone reports the end
	case out.Result == metrics.ResultScheduled:
		r.bound(pod)
		return ctrl.Result{}, nil
	case out.Unschedulable:
		if pinned && r.attemptsOf(pod) >= strandedAttempts {
			return ctrl.Result{}, r.recoverStranded(ctx, pod, fmt.Sprintf("it is pinned to node %s, where it no longer fits", host))
		}
		r.markWaiting(req.NamespacedName)
		after := r.backoff(pod.UID)
		if out.RequeueAfter > 0 && out.RequeueAfter < after {
			after = out.RequeueAfter // e.g. a gang's recheck
		}
		return ctrl.Result{RequeueAfter: after}, nil
	default:
		if out.Result == metrics.ResultWaiting {
			// Waiting in Permit: node and policy changes may change the answer.
			r.markWaiting(req.NamespacedName)
		}
		return ctrl.Result{RequeueAfter: out.RequeueAfter}, nil
	}
}

// bound records a bound pod's metrics and forgets it.
func (r *PodReconciler) bound(pod *corev1.Pod) {
	r.mu.Lock()
	if t, ok := r.firstSeen[pod.UID]; ok {
		metrics.SchedulingDuration.Observe(r.Clock.Since(t).Seconds())
	}
	r.mu.Unlock()
	r.forget(client.ObjectKeyFromObject(pod), pod.UID)
}

// bindDone is called when an asynchronous bind ends: a pod that did not
// bind is requeued (after the delay the cycle asked for).
func (r *PodReconciler) bindDone(pod *corev1.Pod, policy string, out scheduler.Outcome, err error) {
	result := out.Result
	if err != nil {
		result = metrics.ResultError
		ctrl.Log.WithName("bind").Error(err, "Bind failed", "pod", klog.KObj(pod))
	}
	if result != "" {
		metrics.ScheduleAttempts.WithLabelValues(result, policy).Inc()
	}
	if result == metrics.ResultScheduled {
		r.bound(pod)
		return
	}
	delay := out.RequeueAfter
	if err != nil || delay <= 0 {
		delay = r.backoff(pod.UID)
	}
	r.enqueue(client.ObjectKeyFromObject(pod), podPriority(pod), delay)
}

// enqueue adds the pod's key to the controller's queue after delay, at the
// given priority (the queue keeps the higher priority and the earlier time
// of a key already in it). Before the controller has started there is no
// queue yet, and nothing to lose: its start lists every pod.
func (r *PodReconciler) enqueue(key types.NamespacedName, priority int, delay time.Duration) {
	qp := r.queue.Load()
	if qp == nil {
		return
	}
	addToQueue(*qp, key, priority, delay)
}

// addToQueue adds key after delay, at priority when the queue has
// priorities (the controller's has).
func addToQueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], key types.NamespacedName, priority int, delay time.Duration) {
	req := reconcile.Request{NamespacedName: key}
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: &priority, After: delay}, req)
		return
	}
	q.AddAfter(req, delay)
}

// podPriority is the pod's scheduling priority (0 when unset).
func podPriority(pod *corev1.Pod) int {
	if pod.Spec.Priority != nil {
		return int(*pod.Spec.Priority)
	}
	return 0
}

// matchPolicy finds the pod's policy; with none, it says why on the pod.
func (r *PodReconciler) matchPolicy(ctx context.Context, pod *corev1.Pod) (*bindgatev1alpha1.BindingPolicy, error) {
	var policies bindgatev1alpha1.BindingPolicyList
	// Read-only use: skip the deep copy of every policy (and its status).
	if err := r.List(ctx, &policies, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing BindingPolicies: %w", err)
	}
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", pod.Namespace, err)
	}
	pol, reason, why := policy.Match(pod, ns.Labels, policies.Items)
	if pol != nil {
		pol = pol.DeepCopy() // the cycle may keep it; the cache's copy is shared
	}
	if pol == nil {
		return nil, r.setMatched(ctx, pod, corev1.ConditionFalse, reason, why)
	}
	if ready := readyCondition(pol); ready != nil && ready.Status != "True" {
		return nil, r.setMatched(ctx, pod, corev1.ConditionFalse, bindgatev1alpha1.ReasonPolicyNotReady,
			fmt.Sprintf("BindingPolicy %s is not ready: %s", pol.Name, ready.Message))
	}
	if err := r.setMatched(ctx, pod, corev1.ConditionTrue, "Matched", "BindingPolicy "+pol.Name); err != nil {
		return nil, err
	}
	return pol, nil
}

// setMatched writes the PolicyMatched condition (and a NoPolicy event) when
// it changes.
func (r *PodReconciler) setMatched(ctx context.Context, pod *corev1.Pod, status corev1.ConditionStatus, reason, msg string) error {
	for _, c := range pod.Status.Conditions {
		if c.Type == bindgatev1alpha1.PodConditionPolicyMatched {
			if c.Status == status && c.Reason == reason && c.Message == msg {
				return nil
			}
		}
	}
	if status == corev1.ConditionTrue {
		found := false
		for _, c := range pod.Status.Conditions {
			found = found || c.Type == bindgatev1alpha1.PodConditionPolicyMatched
		}
		if !found {
			return nil // nothing to correct: a matched pod needs no extra write
		}
	} else {
		r.Scheduler.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, reason, "Matching", msg)
	}
	return r.Scheduler.Conditions().Set(ctx, pod, corev1.PodCondition{
		Type: bindgatev1alpha1.PodConditionPolicyMatched, Status: status, Reason: reason, Message: msg,
	})
}

func (r *PodReconciler) seen(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.firstSeen[uid]; !ok {
		r.firstSeen[uid] = r.Clock.Now()
	}
}

func (r *PodReconciler) backoff(uid types.UID) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.attempts[uid]
	r.attempts[uid] = n + 1
	d := time.Second << min(n, 5)
	return min(d, 30*time.Second)
}

func (r *PodReconciler) markWaiting(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waiting[key] = struct{}{}
}

func (r *PodReconciler) forget(key types.NamespacedName, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.waiting, key)
	if uid != "" {
		delete(r.firstSeen, uid)
		delete(r.attempts, uid)
	}
}

// wakeWaiting requeues every waiting pod: the cluster changed in a way that
// may let them fit (a node added or changed, a pod gone, a policy changed).
// Pods a permit timeout rejected are tried again too.
func (r *PodReconciler) wakeWaiting() {
	r.Scheduler.ClusterChanged()
	r.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(r.waiting))
	for k := range r.waiting {
		keys = append(keys, k)
	}
	r.mu.Unlock()
	for _, k := range keys {
		r.wake(k)
	}
}

// wake requeues one pod at once.
func (r *PodReconciler) wake(key types.NamespacedName) {
	r.enqueue(key, 0, 0)
}

// onClaimEvent requeues the pods that use a claim that changed: their
// volumes permit condition may now approve (or reject).
func (r *PodReconciler) onClaimEvent(ctx context.Context, obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(pvc.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !r.wantsCycle(pod) || !slices.Contains(permit.ClaimNames(pod), pvc.Name) {
			continue
		}
		r.Scheduler.ClusterChanged()
		r.wake(client.ObjectKeyFromObject(pod))
	}
}

// onPodEvent keeps the cache current and releases reservations of pods that
// are gone or bound.
func (r *PodReconciler) onPodEvent(obj any, deleted bool) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	res, held := r.Cache.Reserved(pod.UID)
	if deleted {
		r.Cache.DeletePod(pod.UID)
	} else {
		r.Cache.UpsertPod(pod)
	}
	if held && (deleted || pod.Spec.NodeName != "") {
		r.Ledger.Release(res.Policy, pod.UID)
	}
	if held && deleted && pod.Spec.NodeName == "" {
		// A gang that lost a member before it ran lets go of the rest.
		go r.Scheduler.Gangs().MemberGone(context.Background(), res.Policy, pod)
	}
	if pod.Spec.NodeName != "" && (deleted || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) {
		r.wakeWaiting()
	}
}

func (r *PodReconciler) onNodeEvent(oldObj, newObj any, deleted bool) {
	if t, ok := newObj.(toolscache.DeletedFinalStateUnknown); ok {
		newObj = t.Obj
	}
	node, ok := newObj.(*corev1.Node)
	if !ok {
		return
	}
	if deleted {
		r.Cache.DeleteNode(node.Name)
		// Pods reserved or waiting on it are placed again at once.
		r.wakeWaiting()
		return
	}
	r.Cache.UpsertNode(node)
	if old, ok := oldObj.(*corev1.Node); ok {
		if apiequality.Semantic.DeepEqual(old.Status.Allocatable, node.Status.Allocatable) &&
			apiequality.Semantic.DeepEqual(old.Labels, node.Labels) &&
			apiequality.Semantic.DeepEqual(old.Spec.Taints, node.Spec.Taints) &&
			old.Spec.Unschedulable == node.Spec.Unschedulable {
			return
		}
	}
	r.wakeWaiting()
}

// onPolicyEvent counts reservations recorded by others (another replica, or
// this process before a restart) and wakes waiting pods.
func (r *PodReconciler) onPolicyEvent(oldObj, newObj any) {
	p, ok := newObj.(*bindgatev1alpha1.BindingPolicy)
	if !ok {
		return
	}
	for i := range p.Status.Reservations {
		r.Cache.AddRecorded(p.Name, &p.Status.Reservations[i], r.reservedPod)
	}
	if old, ok := oldObj.(*bindgatev1alpha1.BindingPolicy); !ok || old.Generation != p.Generation || !apiequality.Semantic.DeepEqual(old.Status.Conditions, p.Status.Conditions) {
		r.wakeWaiting()
	}
}

// reservedPod is the pod of a recorded reservation as the informer shows it
// (nil when unknown).
func (r *PodReconciler) reservedPod(res *bindgatev1alpha1.Reservation) *corev1.Pod {
	pod := &corev1.Pod{}
	if err := r.Get(context.Background(), types.NamespacedName{Namespace: res.PodNamespace, Name: res.PodName}, pod); err != nil {
		return nil
	}
	return pod
}

// load rebuilds reservations from every policy's status and releases the
// stale ones (pod gone, pod bound, node gone), then opens the gate for cycles.
func (r *PodReconciler) load(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("ledger-load")
	var policies bindgatev1alpha1.BindingPolicyList
	if err := r.List(ctx, &policies); err != nil {
		return fmt.Errorf("listing BindingPolicies: %w", err)
	}
	stale := 0
	for _, p := range policies.Items {
		for i := range p.Status.Reservations {
			res := &p.Status.Reservations[i]
			pod := &corev1.Pod{}
			err := r.Get(ctx, types.NamespacedName{Namespace: res.PodNamespace, Name: res.PodName}, pod)
			_, nodeOK := r.Cache.Node(res.Node)
			if err != nil || pod.UID != res.PodUID || pod.Spec.NodeName != "" || !nodeOK {
				r.Ledger.Release(p.Name, res.PodUID)
				stale++
				continue
			}
			r.Cache.AddRecorded(p.Name, res, func(*bindgatev1alpha1.Reservation) *corev1.Pod { return pod })
		}
	}
	log.Info("Loaded recorded reservations", "held", len(r.Cache.Reservations()), "released", stale)
	close(r.loaded)
	return nil
}

// SetupWithManager registers the controller, the informer handlers that
// keep the cache current, and the start-up load of the ledger.
func (r *PodReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	r.loaded = make(chan struct{})
	r.waiting = map[types.NamespacedName]struct{}{}
	r.firstSeen = map[types.UID]time.Time{}
	r.attempts = map[types.UID]int{}

	informers := mgr.GetCache()
	podInf, err := informers.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("getting the pod informer: %w", err)
	}
	if _, err := podInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			r.onPodEvent(o, false)
			// A new gang member may complete a waiting gang.
			if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName == "" && p.Labels[bindgatev1alpha1.GroupLabel] != "" {
				r.wakeWaiting()
			}
		},
		UpdateFunc: func(_, o any) { r.onPodEvent(o, false) },
		DeleteFunc: func(o any) { r.onPodEvent(o, true) },
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	nodeInf, err := informers.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return fmt.Errorf("getting the node informer: %w", err)
	}
	if _, err := nodeInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.onNodeEvent(nil, o, false) },
		UpdateFunc: func(old, o any) { r.onNodeEvent(old, o, false) },
		DeleteFunc: func(o any) { r.onNodeEvent(nil, o, true) },
	}); err != nil {
		return fmt.Errorf("watching nodes: %w", err)
	}
	polInf, err := informers.GetInformer(ctx, &bindgatev1alpha1.BindingPolicy{})
	if err != nil {
		return fmt.Errorf("getting the policy informer: %w", err)
	}
	if _, err := polInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.onPolicyEvent(nil, o) },
		UpdateFunc: func(old, o any) { r.onPolicyEvent(old, o) },
		DeleteFunc: func(any) { r.wakeWaiting() },
	}); err != nil {
		return fmt.Errorf("watching policies: %w", err)
	}

	pvcInf, err := informers.GetInformer(ctx, &corev1.PersistentVolumeClaim{})
	if err != nil {
		return fmt.Errorf("getting the claim informer: %w", err)
	}
	if _, err := pvcInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.onClaimEvent(ctx, o) },
		UpdateFunc: func(_, o any) { r.onClaimEvent(ctx, o) },
		DeleteFunc: func(o any) { r.onClaimEvent(ctx, o) },
	}); err != nil {
		return fmt.Errorf("watching claims: %w", err)
	}

	if err := mgr.Add(&loader{r: r, cache: informers}); err != nil {
		return fmt.Errorf("adding the ledger loader: %w", err)
	}
	if err := mgr.Add(expirer{c: r.Cache}); err != nil {
		return fmt.Errorf("adding the reservation expirer: %w", err)
	}

	return ctrl.NewControllerManagedBy(mgr).
		Named("pod").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers, UsePriorityQueue: new(true)}).
		WatchesRawSource(source.Kind(informers, client.Object(&corev1.Pod{}), podHandler(r))).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			r.queue.Store(&q)
			return nil
		})).
		Complete(r)
}

// podHandler enqueues pods that want a cycle, by pod priority.
func podHandler(r *PodReconciler) handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || !r.wantsCycle(pod) {
			return
		}
		addToQueue(q, client.ObjectKeyFromObject(pod), podPriority(pod), 0)
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.ObjectNew, q)
		},
	}
}

// loader runs the ledger load once the caches have synced. It needs leader
// election like the controllers it unblocks.
type loader struct {
	r     *PodReconciler
	cache interface {
		WaitForCacheSync(ctx context.Context) bool
	}
}

func (l *loader) Start(ctx context.Context) error {
	if !l.cache.WaitForCacheSync(ctx) {
		return errors.New("caches did not sync")
	}
	return l.r.load(ctx)
}

func (l *loader) NeedLeaderElection() bool { return true }

func readyCondition(p *bindgatev1alpha1.BindingPolicy) *metav1.Condition {
	return meta.FindStatusCondition(p.Status.Conditions, bindgatev1alpha1.ConditionReady)
}

// expirer drops released reservations whose bind the informer never showed.
type expirer struct{ c *cache.Cache }

func (e expirer) Start(ctx context.Context) error {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			e.c.ExpireReleased()
		}
	}
}
