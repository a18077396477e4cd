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

	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/framework"
)

// AsyncBinder runs the binding cycle (BindHook, PreBind, gate lift,
// pods/binding, PostBind) off the worker that reserved the pod, as
// kube-scheduler does, so that the worker is free for the next pod as soon
// as this one is reserved and permitted.
//
// Binds run on a pool of Binds long-lived goroutines, which take them from
// a queue of Queue binds: at most Binds are in flight, and once Queue more
// wait, dispatch waits too (back-pressure). The queue lets a worker go on to
// the next pod while every bind goroutine is busy, as kube-scheduler's
// scheduling cycle goes on while its binding goroutines pile up (without
// it, workers waited for a free bind goroutine, and the API server got the
// binds one by one: measured in docs/benchmarks.md). The goroutines keep
// their grown stacks from one bind to the next (a fresh goroutine per bind
// grew its stack through the HTTP/2 client every time, 6% of the
// operator's CPU).
//
// A gated pod's gate is lifted ahead of its binding, as the path without
// bindgate lifts gates ahead of kube-scheduler: with Ungates above zero, a
// second pool of that many goroutines runs BindHook, PreBind and the gate
// lift, and puts the pod in the bind queue (a full queue holds the gate
// lifters back, and a busy gate-lift pool the workers). A pod waiting there
// is ungated, pinned to its node and carries its reservation's record,
// exactly as a pod between the two writes of one bind: a restart resumes it
// the same way. A pod without a gate (schedulerName) waits in the queue with
// nothing written, as a pod whose worker waited for a bind goroutine did.
type AsyncBinder struct {
	ctx     context.Context
	opts    AsyncOptions
	onDone  OnDone
	ungates chan func() // stage one: gated pods' gate lifts, when opts.Ungates > 0
	binds   chan func() // the bind queue: whole binds, and stage two
	// inFlight holds the pods handed to the binder until it reports them.
	inFlight sync.Map // types.UID -> struct{}
}

// AsyncOptions sizes an AsyncBinder.
type AsyncOptions struct {
	// Binds is how many binds run at once (at least 1).
	Binds int
	// Ungates is how many gate lifts run at once ahead of the binds; 0
	// lifts each gate on its bind's goroutine, right before the binding.
	Ungates int
	// Queue is how many binds may wait for a bind goroutine (0: four per
	// bind goroutine).
	Queue int
}

// OnDone is told how a bind handed to the AsyncBinder ended, as Schedule
// would have said it (a nil *Status: bound).
type OnDone func(pod *corev1.Pod, policy string, st *framework.Status, after time.Duration)

// NewAsyncBinder makes a binder whose binds run under ctx (its goroutines
// end when ctx, the manager's, is cancelled) and report to onDone.
func NewAsyncBinder(ctx context.Context, opts AsyncOptions, onDone OnDone) *AsyncBinder {
	opts.Binds = max(opts.Binds, 1)
	opts.Ungates = max(opts.Ungates, 0)
	if opts.Queue <= 0 {
		opts.Queue = 4 * opts.Binds
	}
	a := &AsyncBinder{ctx: ctx, opts: opts, onDone: onDone, binds: make(chan func(), opts.Queue)}
	if opts.Ungates > 0 {
		a.ungates = make(chan func())
	}
	// The pools are of fixed size: they start with the binder, so that an
	// idle process already counts them (a leak check compares its
	// goroutines before and after a run).
	a.startPools()
	return a
}

// Busy says whether a bind of the pod is in flight.
func (a *AsyncBinder) Busy(uid types.UID) bool {
	if a == nil {
		return false
	}
	_, ok := a.inFlight.Load(uid)
	return ok
}

// startPools starts the goroutines; NewAsyncBinder calls it once.
func (a *AsyncBinder) startPools() {
	for range a.opts.Binds {
		go a.run(a.binds)
	}
	for range a.opts.Ungates {
		go a.run(a.ungates)
	}
}

// submit puts job in the bind queue, waiting while it is full. It fails
// only when ctx or the binder's context ends first.
func (a *AsyncBinder) submit(ctx context.Context, job func()) error {
	return a.send(ctx, a.binds, job)
}

// submitUngate hands job to an idle gate-lift goroutine, waiting while every
// one is busy. The binder must have a gate-lift pool (Ungates > 0).
func (a *AsyncBinder) submitUngate(ctx context.Context, job func()) error {
	return a.send(ctx, a.ungates, job)
}

// enqueue puts job, a pod's second stage, in the bind queue, waiting while
// it is full. It fails only when the binder's context ends first.
func (a *AsyncBinder) enqueue(job func()) error {
	return a.submit(a.ctx, job)
}

func (a *AsyncBinder) send(ctx context.Context, ch chan func(), job func()) error {
	// A select picks at random among ready cases: a queue with room must
	// not take a job after either context ended.
	if err := a.ctx.Err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case ch <- job:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-a.ctx.Done():
		return a.ctx.Err()
	}
}

// run executes jobs until the binder's context ends.
func (a *AsyncBinder) run(jobs <-chan func()) {
	for {
		select {
		case job := <-jobs:
			job()
		case <-a.ctx.Done():
			return
		}
	}
}

// done reports a bind that ended. The pod is not busy any more before
// onDone requeues it: a cycle that found it busy would end without a
// requeue of its own.
func (a *AsyncBinder) done(pod *corev1.Pod, policy string, st *framework.Status, after time.Duration) {
	a.inFlight.Delete(pod.UID)
	if a.onDone != nil {
		a.onDone(pod, policy, st, after)
	}
}

// dispatchBind binds synchronously without an AsyncBinder, else hands the
// bind to one (Skip: it reports through its OnDone). A gated pod goes to
// the gate-lift pool, which hands it on to the bind pool once its gate is
// lifted.
func (s *Scheduler) dispatchBind(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node) (*framework.Status, time.Duration) {
	a := s.Async
	if a == nil {
		return s.bind(ctx, state, pod, node)
	}
	pod = pod.DeepCopy()
	policy := state.Policy.Name
	a.inFlight.Store(pod.UID, struct{}{})
	var err error
	if a.ungates != nil && bind.HasGate(pod) {
		err = a.submitUngate(ctx, func() {
			ungated, took, st, after := s.ungate(a.ctx, state, pod, node)
			if st != nil {
				a.done(pod, policy, st, after)
				return
			}
			if err := a.enqueue(func() {
				st, after := s.bindUngated(a.ctx, state, ungated, node, took)
				a.done(ungated, policy, st, after)
			}); err != nil {
				// The process is stopping: the pod is ungated and carries
				// its record; the next start resumes it.
				s.binding.Delete(pod.UID)
				a.done(ungated, policy, framework.AsStatus(err), 0)
			}
		})
	} else {
		err = a.submit(ctx, func() {
			st, after := s.bind(a.ctx, state, pod, node)
			a.done(pod, policy, st, after)
		})
	}
	if err != nil {
		a.inFlight.Delete(pod.UID)
		return framework.AsStatus(err), 0
	}
	return framework.NewStatus(framework.Skip, "bind dispatched"), 0
}
