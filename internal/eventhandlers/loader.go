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

package eventhandlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/cache"
)

// AddToManager registers the handlers with the manager's informers and
// adds the Loader and the Expirer; the channel is closed once the ledger is
// loaded.
func (h *Handlers) AddToManager(ctx context.Context, mgr manager.Manager) (<-chan struct{}, error) {
	if err := h.Register(ctx, mgr.GetCache()); err != nil {
		return nil, err
	}
	loader := NewLoader(h, mgr.GetCache())
	if err := mgr.Add(loader); err != nil {
		return nil, fmt.Errorf("adding the ledger loader: %w", err)
	}
	if err := mgr.Add(Expirer{Cache: h.Cache}); err != nil {
		return nil, fmt.Errorf("adding the reservation expirer: %w", err)
	}
	return loader.Loaded(), nil
}

// Loader rebuilds the reservations recorded in every policy's status once
// the informer caches have synced and handed their initial lists to the
// handlers (the cache then holds every node and bound pod), releases the
// stale ones (pod gone, pod bound, node gone), then closes Loaded: no cycle
// runs before, so none double-books. It needs leader election like the
// controllers it unblocks.
type Loader struct {
	*Handlers
	informers syncer
	loaded    chan struct{}
}

// syncer is the manager's informer cache.
type syncer interface {
	WaitForCacheSync(ctx context.Context) bool
}

// NewLoader returns a loader for h's cache and ledger, started once
// informers have synced.
func NewLoader(h *Handlers, informers syncer) *Loader {
	return &Loader{Handlers: h, informers: informers, loaded: make(chan struct{})}
}

// Loaded is closed once the recorded reservations are in the cache.
func (l *Loader) Loaded() <-chan struct{} { return l.loaded }

// Start implements manager.Runnable.
func (l *Loader) Start(ctx context.Context) error {
	if !l.informers.WaitForCacheSync(ctx) || !l.WaitDelivered(ctx) {
		return errors.New("caches did not sync")
	}
	return l.load(ctx)
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (l *Loader) NeedLeaderElection() bool { return true }

func (l *Loader) load(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("ledger-load")
	var policies bindgatev1alpha1.BindingPolicyList
	if err := l.Reader.List(ctx, &policies); err != nil {
		return fmt.Errorf("listing BindingPolicies: %w", err)
	}
	stale := 0
	for _, p := range policies.Items {
		for i := range p.Status.Reservations {
			res := &p.Status.Reservations[i]
			pod := &corev1.Pod{}
			err := l.Reader.Get(ctx, types.NamespacedName{Namespace: res.PodNamespace, Name: res.PodName}, pod)
			_, nodeOK := l.Cache.Node(res.Node)
			if err != nil || pod.UID != res.PodUID || pod.Spec.NodeName != "" || !nodeOK {
				l.Ledger.Release(p.Name, res.PodUID)
				stale++
				continue
			}
			l.Cache.AddRecorded(p.Name, res, func(*bindgatev1alpha1.Reservation) *corev1.Pod { return pod })
		}
	}
	log.Info("Loaded recorded reservations", "held", len(l.Cache.Reservations()), "released", stale)
	close(l.loaded)
	return nil
}

// Expirer drops released reservations whose bind the informer never
// showed, every Period (5s when zero).
type Expirer struct {
	Cache  *cache.Cache
	Period time.Duration
}

// Start implements manager.Runnable.
func (e Expirer) Start(ctx context.Context) error {
	period := e.Period
	if period <= 0 {
		period = 5 * time.Second
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			e.Cache.ExpireReleased()
		}
	}
}
