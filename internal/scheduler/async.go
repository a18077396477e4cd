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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bindgate/bindgate/internal/framework"
)

// ResultBinding is the Outcome.Result of a cycle whose bind was handed to
// the asynchronous binder: the binder reports the end through OnDone.
const ResultBinding = "binding"

// AsyncBinder runs the binding cycle (bind webhook, gate patch, pods/binding,
// PostBind) in its own goroutine, as kube-scheduler does, so that a worker is
// free for the next pod as soon as this one is reserved and permitted. At most
// Concurrency binds are in flight; past that, dispatch waits (back-pressure).
type AsyncBinder struct {
	ctx      context.Context
	sem      chan struct{}
	onDone   func(pod *corev1.Pod, policy string, out Outcome, err error)
	inFlight sync.Map // types.UID -> struct{}
}

// NewAsyncBinder makes a binder whose binds run under ctx (cancelled when the
// manager stops) and report to onDone.
func NewAsyncBinder(ctx context.Context, concurrency int, onDone func(pod *corev1.Pod, policy string, out Outcome, err error)) *AsyncBinder {
	if concurrency <= 0 {
		concurrency = 1
	}
	return &AsyncBinder{ctx: ctx, sem: make(chan struct{}, concurrency), onDone: onDone}
}

// Busy says whether a bind of the pod is in flight.
func (a *AsyncBinder) Busy(uid types.UID) bool {
	if a == nil {
		return false
	}
	_, ok := a.inFlight.Load(uid)
	return ok
}

// dispatchBind binds synchronously without an AsyncBinder, else hands the
// bind to one.
func (s *Scheduler) dispatchBind(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node) (Outcome, error) {
	a := s.Async
	if a == nil {
		return s.bind(ctx, state, pod, node)
	}
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	}
	a.inFlight.Store(pod.UID, struct{}{})
	pod = pod.DeepCopy()
	go func() {
		defer func() {
			a.inFlight.Delete(pod.UID)
			<-a.sem
		}()
		out, err := s.bind(a.ctx, state, pod, node)
		if a.onDone != nil {
			a.onDone(pod, state.Policy.Name, out, err)
		}
	}()
	return Outcome{Result: ResultBinding}, nil
}
