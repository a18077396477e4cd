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

// Package eventhandlers keeps bindgate's in-memory state current from the
// informers, as kube-scheduler's eventhandlers.go does: pods and nodes into
// the cache, reservations recorded by others (another replica, or this
// process before a restart) into the cache, reservations of pods that are
// gone or bound released from the ledger, and unschedulable pods moved back
// to the active queue on the events that can make them schedulable.
//
// It also holds the start-up load of the ledger (Loader) and the expiry of
// released reservations (Expirer).
package eventhandlers

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/ledger"
	"github.com/bindgate/bindgate/internal/permit"
	"github.com/bindgate/bindgate/internal/queue"
)

// Handlers are the informer event handlers of the binding cycle.
type Handlers struct {
	// Reader reads pods from the informer cache.
	Reader client.Reader
	Cache  *cache.Cache
	Ledger *ledger.Ledger
	Queue  *queue.Queue
	// MemberGone, when set, is told of a reserved pod deleted before it
	// bound: a gang that lost a member before it ran lets go of the rest.
	MemberGone func(ctx context.Context, policy string, pod *corev1.Pod)
	// Forget, when set, is told of every pod deleted or bound: the
	// scheduler drops the state it kept in memory for it.
	Forget func(ctx context.Context, pod *corev1.Pod)

	// delivered says, per handler registered, whether the informer's
	// initial list has reached it (Register fills it).
	delivered []toolscache.InformerSynced
}

// Responsible says whether pod is one bindgate schedules: unbound and not
// being deleted, and carrying the gate, naming bindgate as its scheduler,
// ungated and pinned by bindgate but not bound (a restart), or holding a
// reservation.
func (h *Handlers) Responsible(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || h.Cache.RecentlyBound(pod.UID) {
		return false
	}
	if bind.Ours(pod) {
		return true
	}
	_, held := h.Cache.Reserved(pod.UID)
	return held
}

// Register adds the handlers to the pod, node, policy and claim informers.
func (h *Handlers) Register(ctx context.Context, informers crcache.Informers) error {
	for _, r := range []struct {
		obj client.Object
		h   toolscache.ResourceEventHandlerFuncs
	}{{
		obj: &corev1.Pod{},
		h: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    h.onPodAdd,
			UpdateFunc: func(_, o any) { h.onPod(o, false) },
			DeleteFunc: func(o any) { h.onPod(o, true) },
		},
	}, {
		obj: &corev1.Node{},
		h: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { h.onNode(nil, o, false) },
			UpdateFunc: func(old, o any) { h.onNode(old, o, false) },
			DeleteFunc: func(o any) { h.onNode(nil, o, true) },
		},
	}, {
		obj: &bindgatev1alpha1.BindingPolicy{},
		h: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { h.onPolicy(nil, o) },
			UpdateFunc: h.onPolicy,
			DeleteFunc: func(any) { h.Queue.MoveAllToActive() },
		},
	}, {
		obj: &corev1.PersistentVolumeClaim{},
		h: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { h.onClaim(ctx, o) },
			UpdateFunc: func(_, o any) { h.onClaim(ctx, o) },
			DeleteFunc: func(o any) { h.onClaim(ctx, o) },
		},
	}} {
		inf, err := informers.GetInformer(ctx, r.obj)
		if err != nil {
			return fmt.Errorf("getting the %T informer: %w", r.obj, err)
		}
		reg, err := inf.AddEventHandler(r.h)
		if err != nil {
			return fmt.Errorf("watching %T: %w", r.obj, err)
		}
		h.delivered = append(h.delivered, reg.HasSynced)
	}
	return nil
}

// WaitDelivered waits until every handler Register added has been handed
// the informers' initial lists: an informer that has synced may not have
// delivered them yet (handlers run apart from the informer's store), and
// until then the cache lacks nodes and bound pods that exist. It reports
// false when ctx ends first.
func (h *Handlers) WaitDelivered(ctx context.Context) bool {
	return toolscache.WaitForCacheSync(ctx.Done(), h.delivered...)
}

// unwrap returns the object of a tombstone.
func unwrap(obj any) any {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// onPodAdd: a pod created. A new gang member wakes no one: its own cycle
// places its gang (waking every unschedulable pod on each member's arrival
// made a gang of N check itself about N²/2 times).
func (h *Handlers) onPodAdd(obj any) { h.onPod(obj, false) }

// onPod keeps the cache current and releases reservations of pods that are
// gone or bound; a bound pod that ended frees room.
func (h *Handlers) onPod(obj any, deleted bool) {
	pod, ok := unwrap(obj).(*corev1.Pod)
	if !ok {
		return
	}
	res, held := h.Cache.Reserved(pod.UID)
	if deleted {
		h.Cache.DeletePod(pod.UID)
	} else {
		h.Cache.UpsertPod(pod)
	}
	if held && (deleted || pod.Spec.NodeName != "") {
		if res.Recorded {
			// Counted from a policy event: a status the ledger may
			// not have read (another replica's record).
			h.Ledger.ReleaseSeen(res.Policy, pod.UID)
		} else {
			h.Ledger.Release(res.Policy, pod.UID)
		}
	}
	if (deleted || pod.Spec.NodeName != "") && h.Forget != nil {
		h.Forget(context.Background(), pod)
	}
	if held && deleted && pod.Spec.NodeName == "" && h.MemberGone != nil {
		go h.MemberGone(context.Background(), res.Policy, pod)
	}
	if pod.Spec.NodeName != "" && (deleted || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) {
		h.Queue.MoveAllToActive()
	}
}

// onNode keeps the cache current; a node added, removed, or changed in
// what placement reads (allocatable, labels, taints, unschedulable) may
// help unschedulable pods, and pods reserved on a removed node are placed
// again at once.
func (h *Handlers) onNode(oldObj, newObj any, deleted bool) {
	node, ok := unwrap(newObj).(*corev1.Node)
	if !ok {
		return
	}
	if deleted {
		h.Cache.DeleteNode(node.Name)
		h.Queue.MoveAllToActive()
		return
	}
	h.Cache.UpsertNode(node)
	if old, ok := oldObj.(*corev1.Node); ok {
		if apiequality.Semantic.DeepEqual(old.Status.Allocatable, node.Status.Allocatable) &&
			apiequality.Semantic.DeepEqual(old.Labels, node.Labels) &&
			apiequality.Semantic.DeepEqual(old.Spec.Taints, node.Spec.Taints) &&
			old.Spec.Unschedulable == node.Spec.Unschedulable {
			return
		}
	}
	h.Queue.MoveAllToActive()
}

// onPolicy counts reservations recorded by others (and releases the
// records of pods deleted since) and, when the spec or the conditions
// changed, wakes unschedulable pods.
func (h *Handlers) onPolicy(oldObj, newObj any) {
	p, ok := newObj.(*bindgatev1alpha1.BindingPolicy)
	if !ok {
		return
	}
	for i := range p.Status.Reservations {
		if void := h.Cache.AddRecorded(p.Name, &p.Status.Reservations[i], h.ReservedPod); void {
			// The record of a pod deleted since, or bound to another
			// node: whoever wrote it, it holds nothing any more.
			h.Ledger.ReleaseSeen(p.Name, p.Status.Reservations[i].PodUID)
		}
	}
	if old, ok := oldObj.(*bindgatev1alpha1.BindingPolicy); !ok || old.Generation != p.Generation || !apiequality.Semantic.DeepEqual(old.Status.Conditions, p.Status.Conditions) {
		h.Queue.MoveAllToActive()
	}
}

// onClaim requeues the pods that use a claim that changed: their volumes
// permit condition may now approve (or reject).
func (h *Handlers) onClaim(ctx context.Context, obj any) {
	pvc, ok := unwrap(obj).(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	h.requeueUsers(ctx, pvc.Namespace, func(pod *corev1.Pod) bool {
		return slices.Contains(permit.ClaimNames(pod), pvc.Name)
	})
}

// requeueUsers requeues the pods of namespace ns that bindgate schedules
// and that uses says use the object that changed.
func (h *Handlers) requeueUsers(ctx context.Context, ns string, uses func(*corev1.Pod) bool) {
	var pods corev1.PodList
	if err := h.Reader.List(ctx, &pods, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if h.Responsible(pod) && uses(pod) {
			h.Queue.MoveToActive(client.ObjectKeyFromObject(pod))
		}
	}
}

// Release releases the reservation pod holds, if any.
func (h *Handlers) Release(pod *corev1.Pod) {
	if res, held := h.Cache.Reserved(pod.UID); held {
		h.Ledger.Release(res.Policy, pod.UID)
	}
}

// ReservedPod is the pod of a recorded reservation as the informer shows
// it (nil when unknown).
func (h *Handlers) ReservedPod(res *bindgatev1alpha1.Reservation) *corev1.Pod {
	pod := &corev1.Pod{}
	if err := h.Reader.Get(context.Background(), types.NamespacedName{Namespace: res.PodNamespace, Name: res.PodName}, pod); err != nil {
		return nil
	}
	return pod
}
