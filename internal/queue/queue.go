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

// Package queue is the pod controller's scheduling queue, shaped like
// kube-scheduler's backend/queue:
//
//   - active: the controller's priority workqueue, ordered by pod priority
//     (a key already in it keeps the higher priority and the earlier time);
//   - backoff: a pod whose cycle failed comes back after client-go's
//     per-item exponential rate limiter says (1s doubling to 30s);
//   - unschedulable: pods that wait for the cluster to change (no fit, no
//     policy, waiting in Permit); the informer events that can make them
//     schedulable (internal/eventhandlers) move them all to active.
//
// The queue also remembers when it first saw each pod, for the scheduling
// duration metric.
package queue

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Backoff bounds: the first retry of a pod after 1s, doubling per failure
// up to 30s.
const (
	InitialBackoff = time.Second
	MaxBackoff     = 30 * time.Second
)

// Queue is the scheduling queue. Its zero value is not usable: use New.
type Queue struct {
	clock clock.Clock
	// onMove runs before unschedulable pods move to active (the
	// scheduler's ClusterChanged: pods a permit timeout rejected may try
	// again).
	onMove  func()
	backoff workqueue.TypedRateLimiter[types.UID]

	mu            sync.Mutex
	unschedulable map[types.NamespacedName]struct{}
	firstSeen     map[types.UID]time.Time

	// active is the controller's workqueue, captured when the controller
	// starts (Source): adds from outside Reconcile (a bind that did not
	// bind, wake-ups) go straight into it, deduplicated and never dropped.
	active atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// New returns an empty queue. onMove (may be nil) runs whenever the
// cluster changed in a way that may help unschedulable pods.
func New(clk clock.Clock, onMove func()) *Queue {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Queue{
		clock:         clk,
		onMove:        onMove,
		backoff:       workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](InitialBackoff, MaxBackoff),
		unschedulable: map[types.NamespacedName]struct{}{},
		firstSeen:     map[types.UID]time.Time{},
	}
}

// Source captures the controller's workqueue when the controller starts;
// register it with WatchesRawSource.
func (q *Queue) Source() source.Source {
	return source.Func(func(_ context.Context, wq workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.active.Store(&wq)
		return nil
	})
}

// Handler enqueues the pods that responsible accepts, at their priority.
func Handler(responsible func(*corev1.Pod) bool) handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(obj client.Object, wq workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || !responsible(pod) {
			return
		}
		add(wq, client.ObjectKeyFromObject(pod), Priority(pod), 0)
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], wq workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, wq)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], wq workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.ObjectNew, wq)
		},
	}
}

// Priority is the pod's scheduling priority (0 when unset).
func Priority(pod *corev1.Pod) int {
	if pod.Spec.Priority != nil {
		return int(*pod.Spec.Priority)
	}
	return 0
}

// Add puts key into the active queue after delay, at priority. Before the
// controller has started there is no queue yet, and nothing to lose: its
// start lists every pod.
func (q *Queue) Add(key types.NamespacedName, priority int, delay time.Duration) {
	if wq := q.active.Load(); wq != nil {
		add(*wq, key, priority, delay)
	}
}

// Activate puts key into the active queue at once.
func (q *Queue) Activate(key types.NamespacedName) { q.Add(key, 0, 0) }

// add adds key after delay, at priority when the queue has priorities (the
// controller's has).
func add(wq workqueue.TypedRateLimitingInterface[reconcile.Request], key types.NamespacedName, priority int, delay time.Duration) {
	req := reconcile.Request{NamespacedName: key}
	if pq, ok := wq.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: &priority, After: delay}, req)
		return
	}
	wq.AddAfter(req, delay)
}

// Seen records the first time a cycle ran for the pod.
func (q *Queue) Seen(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.firstSeen[uid]; !ok {
		q.firstSeen[uid] = q.clock.Now()
	}
}

// Backoff counts a failed attempt of the pod and returns how long it waits
// before the next.
func (q *Queue) Backoff(uid types.UID) time.Duration { return q.backoff.When(uid) }

// Attempts is how many failed attempts the pod had in a row.
func (q *Queue) Attempts(uid types.UID) int { return q.backoff.NumRequeues(uid) }

// MarkUnschedulable parks key until the next MoveAllToActive.
func (q *Queue) MarkUnschedulable(key types.NamespacedName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.unschedulable[key] = struct{}{}
}

// Forget drops everything the queue knows of the pod (uid may be empty
// when the pod is gone).
func (q *Queue) Forget(key types.NamespacedName, uid types.UID) {
	q.mu.Lock()
	delete(q.unschedulable, key)
	if uid != "" {
		delete(q.firstSeen, uid)
	}
	q.mu.Unlock()
	if uid != "" {
		q.backoff.Forget(uid)
	}
}

// Done forgets a bound pod and returns how long ago the queue first saw it
// (ok is false when it never did).
func (q *Queue) Done(pod *corev1.Pod) (since time.Duration, ok bool) {
	q.mu.Lock()
	t, ok := q.firstSeen[pod.UID]
	q.mu.Unlock()
	if ok {
		since = q.clock.Since(t)
	}
	q.Forget(client.ObjectKeyFromObject(pod), pod.UID)
	return since, ok
}

// MoveToActive requeues one pod at once after a change that concerns it
// (a claim it uses changed).
func (q *Queue) MoveToActive(key types.NamespacedName) {
	if q.onMove != nil {
		q.onMove()
	}
	q.Activate(key)
}

// MoveAllToActive requeues every unschedulable pod at once: the cluster
// changed in a way that may let them fit (a node added or changed, a pod
// gone, a policy changed).
func (q *Queue) MoveAllToActive() {
	if q.onMove != nil {
		q.onMove()
	}
	q.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(q.unschedulable))
	for k := range q.unschedulable {
		keys = append(keys, k)
	}
	q.mu.Unlock()
	for _, k := range keys {
		q.Activate(k)
	}
}
