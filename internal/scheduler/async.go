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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bindgate/bindgate/internal/framework"
)

// AsyncBinder runs the binding cycle (BindHook, gate lift, pods/binding,
// PostBind) off the worker that reserved the pod, as kube-scheduler does, so
// that the worker is free for the next pod as soon as this one is reserved
// and permitted. Binds run on a pool of Concurrency long-lived goroutines:
// at most that many are in flight, and past that, dispatch waits
// (back-pressure). The goroutines keep their grown stacks from one bind to
// the next (a fresh goroutine per bind grew its stack through the HTTP/2
// client every time, 6% of the operator's CPU).
type AsyncBinder struct {
	ctx      context.Context
	jobs     chan func()
	workers  int
	start    sync.Once
	onDone   OnDone
	inFlight sync.Map // types.UID -> struct{}
}

// OnDone is told how a bind handed to the AsyncBinder ended, as Schedule
// would have said it (a nil *Status: bound).
type OnDone func(pod *corev1.Pod, policy string, st *framework.Status, after time.Duration)

// NewAsyncBinder makes a binder whose binds run under ctx (its goroutines
// end when ctx, the manager's, is cancelled) and report to onDone.
func NewAsyncBinder(ctx context.Context, concurrency int, onDone OnDone) *AsyncBinder {
	if concurrency <= 0 {
		concurrency = 1
	}
	return &AsyncBinder{ctx: ctx, jobs: make(chan func()), workers: concurrency, onDone: onDone}
}

// Busy says whether a bind of the pod is in flight.
func (a *AsyncBinder) Busy(uid types.UID) bool {
	if a == nil {
		return false
	}
	_, ok := a.inFlight.Load(uid)
	return ok
}

// submit hands job to an idle goroutine of the pool, waiting while every
// one is busy. It fails only when ctx or the binder's context ends first.
func (a *AsyncBinder) submit(ctx context.Context, job func()) error {
	a.start.Do(func() {
		for range a.workers {
			go a.run()
		}
	})
	select {
	case a.jobs <- job:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-a.ctx.Done():
		return a.ctx.Err()
	}
}

// run executes submitted jobs until the binder's context ends.
func (a *AsyncBinder) run() {
	for {
		select {
		case job := <-a.jobs:
			job()
		case <-a.ctx.Done():
			return
		}
	}
}

// dispatchBind binds synchronously without an AsyncBinder, else hands the
// bind to one (Skip: it reports through its OnDone).
func (s *Scheduler) dispatchBind(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node) (*framework.Status, time.Duration) {
	a := s.Async
	if a == nil {
		return s.bind(ctx, state, pod, node)
	}
	pod = pod.DeepCopy()
	a.inFlight.Store(pod.UID, struct{}{})
	err := a.submit(ctx, func() {
		st, after := s.bind(a.ctx, state, pod, node)
		// Not busy any more before onDone requeues the pod: a cycle that
		// found it busy would end without a requeue of its own.
		a.inFlight.Delete(pod.UID)
		if a.onDone != nil {
			a.onDone(pod, state.Policy.Name, st, after)
		}
	})
	if err != nil {
		a.inFlight.Delete(pod.UID)
		return framework.AsStatus(err), 0
	}
	return framework.NewStatus(framework.Skip, "bind dispatched"), 0
}
