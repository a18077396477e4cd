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

// Package postbind delivers the PostBind notices of bound pods.
//
// The bind records, through the binding's annotations, which hooks are
// still to be notified (scheduling.bindgate.dev/postbind-pending, a
// comma-separated list of the policy's postBind names). The Dispatcher
// sends each pending hook a signed CloudEvent, retries with exponential
// backoff and jitter up to the hook's maxAttempts, and records the outcome
// on the pod: postbind.scheduling.bindgate.dev/<hook> is "delivered" or
// "failed: <reason>", and the hook leaves the pending list, in one patch.
// Since the pending state lives on the pod, a restarted operator resends
// whatever is still pending: delivery is at least once.
//
// Every (policy, hook) pair has its own queue and its own few workers, so a
// slow or dead receiver delays neither binding nor any other receiver.
package postbind

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// Outcomes recorded on the pod and in the deliveries metric.
const (
	ResultDelivered = "delivered"
	ResultFailed    = "failed"
)

// EventFailed is the event reason of a notice that exhausted its attempts.
const EventFailed = "PostBindFailed"

// Defaults.
const (
	DefaultMaxAttempts    = 5
	DefaultWorkersPerHook = 4
	DefaultBaseBackoff    = time.Second
	DefaultMaxBackoff     = 5 * time.Minute
)

// maxReason caps the failure reason recorded in the annotation.
const maxReason = 256

// completedTTL is how long a recorded outcome shields a pod from being
// queued again off a stale cache.
const completedTTL = time.Minute

var deliveriesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "bindgate_postbind_deliveries_total",
	Help: "PostBindHook notices by outcome: delivered, or failed after the hook's attempts.",
}, []string{"policy", "webhook", "result"})

func init() {
	ctrlmetrics.Registry.MustRegister(deliveriesTotal)
}

// Pending is the value of the binding's pending annotation for policy: its
// postBind hook names, comma-joined ("" when it has none).
func Pending(policy *bindgatev1alpha1.BindingPolicy) string {
	names := make([]string, 0, len(policy.Spec.PostBind))
	for _, h := range policy.Spec.PostBind {
		names = append(names, h.Name)
	}
	return strings.Join(names, ",")
}

// PendingHooks returns the hooks still to be notified for pod.
func PendingHooks(pod *corev1.Pod) []string {
	raw := pod.Annotations[bindgatev1alpha1.PostBindPendingAnnotation]
	var out []string
	for _, n := range strings.Split(raw, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// ResultAnnotation is the annotation that records hook's outcome.
func ResultAnnotation(hook string) string {
	return bindgatev1alpha1.PostBindResultAnnotationPrefix + hook
}

// Options configure a Dispatcher.
type Options struct {
	// Client reads pods and policies (from the cache) and patches pods.
	Client client.Client
	// APIReader re-reads a pod after a write conflict.
	APIReader client.Reader
	Webhooks  *webhookclient.Client
	Recorder  events.EventRecorder
	// WorkersPerHook bounds the concurrent calls to one hook.
	WorkersPerHook int
	// BaseBackoff is the delay after the first failed attempt; it doubles
	// per attempt up to MaxBackoff (client-go's per-item exponential rate
	// limiter), with jitter.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
}

// item is one pod to notify; the queue names the hook.
type item struct {
	Namespace, Name string
	UID             types.UID
}

type hookKey struct{ policy, hook string }

// hookQueue is the queue and workers of one (policy, hook).
type hookQueue struct {
	hookKey
	q workqueue.TypedDelayingInterface[item]
	// backoff counts each item's failed attempts and says how long it
	// waits before the next.
	backoff workqueue.TypedRateLimiter[item]

	mu sync.Mutex
	// tracked are the items queued or in flight, from their first enqueue
	// until their outcome is recorded.
	tracked map[types.UID]struct{}
}

// Dispatcher owns the per-hook queues. It is a manager Runnable.
type Dispatcher struct {
	opts Options

	mu        sync.Mutex
	ctx       context.Context
	queues    map[hookKey]*hookQueue
	completed map[string]time.Time
	wg        sync.WaitGroup
}

// NewDispatcher returns a Dispatcher; add it to the manager.
func NewDispatcher(opts Options) *Dispatcher {
	if opts.WorkersPerHook <= 0 {
		opts.WorkersPerHook = DefaultWorkersPerHook
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = DefaultBaseBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	return &Dispatcher{opts: opts, queues: map[hookKey]*hookQueue{}, completed: map[string]time.Time{}}
}

// Start runs the workers until ctx ends; in-flight calls are cancelled and
// their pods stay pending, to be resent by the next leader.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	d.ctx = ctx
	for _, hq := range d.queues {
		d.startWorkers(hq)
	}
	d.mu.Unlock()

	tick := time.NewTicker(completedTTL)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			d.gcCompleted()
		case <-ctx.Done():
			d.mu.Lock()
			for _, hq := range d.queues {
				hq.q.ShutDown()
			}
			d.mu.Unlock()
			d.wg.Wait()
			return nil
		}
	}
}

// NeedLeaderElection: only the leader delivers.
func (d *Dispatcher) NeedLeaderElection() bool { return true }

// Enqueue queues every hook still pending on pod, each on its own queue.
// Hooks already queued keep their place and backoff.
func (d *Dispatcher) Enqueue(pod *corev1.Pod) {
	policy, ok := bind.BoundBy(pod)
	if !ok {
		return // bindgate did not bind it: its owner wrote the annotations
	}
	it := item{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	for _, hook := range PendingHooks(pod) {
		d.mu.Lock()
		if _, done := d.completed[completedKey(pod.UID, hook)]; done {
			d.mu.Unlock()
			continue
		}
		hq := d.queue(hookKey{policy: policy, hook: hook})
		d.mu.Unlock()

		hq.mu.Lock()
		_, tracked := hq.tracked[pod.UID]
		if !tracked {
			hq.tracked[pod.UID] = struct{}{}
		}
		hq.mu.Unlock()
		if !tracked {
			hq.q.Add(it)
		}
	}
}

// queue returns the queue of k, creating it (and, once started, its
// workers). d.mu is held.
func (d *Dispatcher) queue(k hookKey) *hookQueue {
	if hq, ok := d.queues[k]; ok {
		return hq
	}
	hq := &hookQueue{
		hookKey: k,
		q:       workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[item]{Name: ""}),
		backoff: jittered[item]{workqueue.NewTypedItemExponentialFailureRateLimiter[item](d.opts.BaseBackoff, d.opts.MaxBackoff)},
		tracked: map[types.UID]struct{}{},
	}
	d.queues[k] = hq
	if d.ctx != nil {
		d.startWorkers(hq)
	}
	return hq
}

// startWorkers starts hq's workers. d.mu is held and d.ctx is set.
func (d *Dispatcher) startWorkers(hq *hookQueue) {
	if d.ctx.Err() != nil {
		hq.q.ShutDown()
		return
	}
	ctx := d.ctx
	for range d.opts.WorkersPerHook {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			for {
				it, shutdown := hq.q.Get()
				if shutdown {
					return
				}
				d.process(ctx, hq, it)
				hq.q.Done(it)
			}
		}()
	}
}

func completedKey(uid types.UID, hook string) string { return string(uid) + "/" + hook }

func (d *Dispatcher) gcCompleted() {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	for k, t := range d.completed {
		if now.Sub(t) > completedTTL {
			delete(d.completed, k)
		}
	}
}

// untrack forgets an item whose outcome is recorded (or that is gone).
func (d *Dispatcher) untrack(hq *hookQueue, it item, recorded bool) {
	hq.mu.Lock()
	delete(hq.tracked, it.UID)
	hq.mu.Unlock()
	hq.backoff.Forget(it)
	if recorded {
		d.mu.Lock()
		d.completed[completedKey(it.UID, hq.hook)] = time.Now()
		d.mu.Unlock()
	}
}

// process makes one delivery attempt for it.
func (d *Dispatcher) process(ctx context.Context, hq *hookQueue, it item) {
	log := ctrl.LoggerFrom(ctx).WithValues("policy", hq.policy, "webhook", hq.hook,
		"pod", types.NamespacedName{Namespace: it.Namespace, Name: it.Name})
	ctx = ctrl.LoggerInto(ctx, log)

	pod := &corev1.Pod{}
	if err := d.opts.Client.Get(ctx, types.NamespacedName{Namespace: it.Namespace, Name: it.Name}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			d.untrack(hq, it, false)
			return
		}
		d.retryLater(hq, it)
		return
	}
	if pod.UID != it.UID || !slices.Contains(PendingHooks(pod), hq.hook) {
		d.untrack(hq, it, false)
		return
	}

	policy := &bindgatev1alpha1.BindingPolicy{}
	if err := d.opts.Client.Get(ctx, client.ObjectKey{Name: hq.policy}, policy); err != nil {
		if apierrors.IsNotFound(err) {
			d.finish(ctx, hq, it, 0, fmt.Sprintf("BindingPolicy %s no longer exists", hq.policy))
			return
		}
		d.retryLater(hq, it)
		return
	}
	idx := slices.IndexFunc(policy.Spec.PostBind, func(h bindgatev1alpha1.PostBindWebhook) bool { return h.Name == hq.hook })
	if idx < 0 {
		d.finish(ctx, hq, it, 0, fmt.Sprintf("BindingPolicy %s no longer has postBind webhook %s", hq.policy, hq.hook))
		return
	}
	hook := &policy.Spec.PostBind[idx]
	maxAttempts := int(hook.MaxAttempts)
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}

	body, id, err := webhookclient.NewPodBoundEvent(hq.policy, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name},
		pod.UID, hq.hook, eventData(pod))
	if err != nil {
		d.finish(ctx, hq, it, 0, err.Error())
		return
	}
	attempt := hq.backoff.NumRequeues(it) + 1

	resp, err := d.opts.Webhooks.DoCloudEvent(ctx, webhookclient.KindPostBind, hq.hook, &hook.Webhook, id, body)
	if ctx.Err() != nil {
		return // shutting down: the pod stays pending for the next leader
	}
	var reason string
	switch {
	case err != nil:
		reason = err.Error()
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		reason = fmt.Sprintf("HTTP %d", resp.StatusCode)
	default:
		if err := d.record(ctx, hq, it, ResultDelivered); err != nil {
			log.Error(err, "Recording the PostBind delivery")
			d.retryLater(hq, it) // resent: the receiver deduplicates on the event id
			return
		}
		log.V(4).Info("Delivered PostBind notice", "id", id, "attempt", attempt)
		deliveriesTotal.WithLabelValues(hq.policy, hq.hook, ResultDelivered).Inc()
		d.untrack(hq, it, true)
		return
	}
	if attempt >= maxAttempts || errors.Is(err, webhookclient.ErrForbiddenDestination) {
		d.finish(ctx, hq, it, attempt, reason)
		return
	}
	delay := hq.backoff.When(it)
	log.V(4).Info("PostBind attempt failed, retrying", "id", id, "attempt", attempt, "maxAttempts", maxAttempts,
		"retryAfter", delay, "reason", reason)
	hq.q.AddAfter(it, delay)
}

// retryLater requeues an item after a transient error of our own (cache or
// API), without counting an attempt.
func (d *Dispatcher) retryLater(hq *hookQueue, it item) {
	hq.q.AddAfter(it, d.opts.BaseBackoff)
}

// finish records a failure after attempts: annotation, event, metric.
func (d *Dispatcher) finish(ctx context.Context, hq *hookQueue, it item, attempts int, reason string) {
	if len(reason) > maxReason {
		reason = reason[:maxReason] + "..."
	}
	if err := d.record(ctx, hq, it, ResultFailed+": "+reason); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Recording the PostBind failure")
		d.retryLater(hq, it)
		return
	}
	deliveriesTotal.WithLabelValues(hq.policy, hq.hook, ResultFailed).Inc()
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name, pod.UID = it.Namespace, it.Name, it.UID
	d.opts.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, EventFailed, "PostBind",
		"PostBind webhook %s of policy %s failed after %d attempt(s): %s", hq.hook, hq.policy, attempts, reason)
	d.untrack(hq, it, true)
}

// jittered draws each delay of a rate limiter from [d/2, d], so that the
// retries of many pods to one receiver spread out.
type jittered[T comparable] struct{ workqueue.TypedRateLimiter[T] }

func (j jittered[T]) When(it T) time.Duration {
	half := j.TypedRateLimiter.When(it) / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// record writes hook's outcome on the pod and removes it from the pending
// list in one optimistic-locked patch, re-reading the pod on conflicts.
func (d *Dispatcher) record(ctx context.Context, hq *hookQueue, it item, value string) error {
	key := types.NamespacedName{Namespace: it.Namespace, Name: it.Name}
	pod := &corev1.Pod{}
	if err := d.opts.Client.Get(ctx, key, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	for range 10 {
		if pod.UID != it.UID {
			return nil
		}
		pending := PendingHooks(pod)
		if !slices.Contains(pending, hq.hook) {
			return nil // recorded already (another replica, or a resend)
		}
		base := pod.DeepCopy()
		pending = slices.DeleteFunc(pending, func(h string) bool { return h == hq.hook })
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		if len(pending) == 0 {
			delete(pod.Annotations, bindgatev1alpha1.PostBindPendingAnnotation)
		} else {
			pod.Annotations[bindgatev1alpha1.PostBindPendingAnnotation] = strings.Join(pending, ",")
		}
		pod.Annotations[ResultAnnotation(hq.hook)] = value
		err := d.opts.Client.Patch(ctx, pod, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("recording PostBind outcome of %s on pod %s: %w", hq.hook, key, err)
		}
		pod = &corev1.Pod{}
		if err := d.opts.APIReader.Get(ctx, key, pod); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	return fmt.Errorf("recording PostBind outcome of %s on pod %s: too many conflicts", hq.hook, key)
}

// eventData fills the notice's data from the bound pod.
func eventData(pod *corev1.Pod) webhookclient.PodBoundData {
	data := webhookclient.PodBoundData{
		Node:      pod.Spec.NodeName,
		Resources: framework.PodRequests(pod).ResourceList(),
	}
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case corev1.PodScheduled:
			data.Bound = c.LastTransitionTime
		case bindgatev1alpha1.PodConditionPermitted:
			data.Permitted = c.LastTransitionTime
		}
	}
	return data
}
