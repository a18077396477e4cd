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
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/metrics"
)

// pod requests cpu; bound to node when node != "".
func pod(name, cpu, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
}

func policy(mutate ...func(*bindgatev1alpha1.BindingPolicy)) *bindgatev1alpha1.BindingPolicy {
	p := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "uid-p", Generation: 1}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestPermitHoldBackoff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := &Scheduler{Clock: clk}
	const uid = types.UID("u")
	p, pol := pod("u", "1", ""), policy()
	p.UID = uid
	if got := s.permitHoldOff(p, pol); got != 0 {
		t.Fatalf("hold before any timeout: %v", got)
	}
	var got []time.Duration
	for range 11 {
		got = append(got, s.holdAfterPermitTimeout(uid))
	}
	want := []time.Duration{
		time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second,
		64 * time.Second, 128 * time.Second, 256 * time.Second, 5 * time.Minute, 5 * time.Minute,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("holds (-want +got):\n%s", diff)
	}
	if got := s.permitHoldOff(p, pol); got != 5*time.Minute {
		t.Errorf("hold right after the timeout: %v, want 5m", got)
	}
	clk.Step(4 * time.Minute)
	if got := s.permitHoldOff(p, pol); got != time.Minute {
		t.Errorf("hold 4m later: %v, want 1m", got)
	}
	clk.Step(2 * time.Minute)
	if got := s.permitHoldOff(p, pol); got != 0 {
		t.Errorf("hold after it ended: %v, want 0", got)
	}

	// A hold that ended more than 15 minutes ago is forgotten at the next
	// timeout of any pod: that pod starts again at 1s.
	clk.Step(20 * time.Minute)
	s.holdAfterPermitTimeout("other")
	if got := s.holdAfterPermitTimeout(uid); got != time.Second {
		t.Errorf("hold after a forgotten streak: %v, want 1s", got)
	}

	// An approval ends the streak: the next timeout starts again at 1s.
	if got := s.holdAfterPermitTimeout(uid); got != 2*time.Second {
		t.Errorf("second timeout in a row: %v, want 2s", got)
	}
	s.clearPermitHold(uid)
	if got := s.permitHoldOff(p, pol); got != 0 {
		t.Errorf("hold after the approval: %v, want 0", got)
	}
	if got := s.holdAfterPermitTimeout(uid); got != time.Second {
		t.Errorf("hold after an approval: %v, want 1s", got)
	}
}

// TestPermitHoldReject: a pod rejected by a permit timeout is held for 5
// minutes (kube-scheduler's unschedulable limit), not on the 1s, 2s, 4s ...
// backoff of Retry, unless something that may change the answer changes.
func TestPermitHoldReject(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		change func(s *Scheduler, p *corev1.Pod, pol *bindgatev1alpha1.BindingPolicy)
		after  time.Duration // clock step after the change
		want   time.Duration // hold left
	}{
		"nothing changed, just after": {after: time.Second, want: RejectedRetryAfter - time.Second},
		"nothing changed, 4m later":   {after: 4 * time.Minute, want: time.Minute},
		"nothing changed, 5m later":   {after: 5 * time.Minute, want: 0},
		"pod status changed": {change: func(_ *Scheduler, p *corev1.Pod, _ *bindgatev1alpha1.BindingPolicy) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "x"})
		}, after: time.Second, want: RejectedRetryAfter - time.Second},
		"pod annotated": {change: func(_ *Scheduler, p *corev1.Pod, _ *bindgatev1alpha1.BindingPolicy) {
			p.Annotations = map[string]string{"approved": "true"}
		}, want: 0},
		"pod relabelled": {change: func(_ *Scheduler, p *corev1.Pod, _ *bindgatev1alpha1.BindingPolicy) {
			p.Labels = map[string]string{"a": "b"}
		}, want: 0},
		"pod spec changed": {change: func(_ *Scheduler, p *corev1.Pod, _ *bindgatev1alpha1.BindingPolicy) {
			p.Spec.NodeSelector = map[string]string{"a": "b"}
		}, want: 0},
		"policy spec changed":          {change: func(_ *Scheduler, _ *corev1.Pod, pol *bindgatev1alpha1.BindingPolicy) { pol.Generation++ }, want: 0},
		"another policy":               {change: func(_ *Scheduler, _ *corev1.Pod, pol *bindgatev1alpha1.BindingPolicy) { pol.UID = "other" }, want: 0},
		"a node, claim or pod changed": {change: func(s *Scheduler, _ *corev1.Pod, _ *bindgatev1alpha1.BindingPolicy) { s.ClusterChanged() }, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			s := &Scheduler{Clock: clk}
			p, pol := pod("r", "1", ""), policy()
			if got := s.holdAfterReject(p, pol); got != RejectedRetryAfter {
				t.Fatalf("hold = %v, want %v", got, RejectedRetryAfter)
			}
			p, pol = p.DeepCopy(), pol.DeepCopy()
			if tc.change != nil {
				tc.change(s, p, pol)
			}
			clk.Step(tc.after)
			if got := s.permitHoldOff(p, pol); got != tc.want {
				t.Fatalf("hold left = %v, want %v", got, tc.want)
			}
			if tc.want == 0 {
				// The hold is gone: a new timeout starts afresh.
				if got := s.permitHoldOff(pod("r", "1", ""), policy()); got != 0 {
					t.Errorf("hold left after it ended = %v, want 0", got)
				}
			}
		})
	}
	// Retry, by contrast, backs off from 1s.
	s := &Scheduler{Clock: clocktesting.NewFakeClock(start)}
	if got := s.holdAfterPermitTimeout("u"); got != time.Second {
		t.Errorf("Retry hold = %v, want 1s", got)
	}
}

// TestAsyncBinderConcurrency: at most Binds jobs run at once and Queue
// more wait for a goroutine; a submit past that waits for room in the
// queue, and one whose context ends while it waits fails without running
// its job.
func TestAsyncBinderConcurrency(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n, queue = 3, 2
	a := NewAsyncBinder(ctx, AsyncOptions{Binds: n, Queue: queue}, nil)
	var running, peak atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	job := func() {
		defer wg.Done()
		cur := running.Add(1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		<-release
		running.Add(-1)
	}
	// n jobs run and hold their goroutines; the queue holds the other two
	// (each goroutine holds one job at most).
	for range n + queue {
		wg.Add(1)
		if err := a.submit(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	// Every goroutine is busy and the queue full: a further submit waits
	// until its context ends.
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	ran := atomic.Bool{}
	if err := a.submit(short, func() { ran.Store(true) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("submit with every goroutine busy: %v, want %v", err, context.DeadlineExceeded)
	}
	// A waiting submit goes through as soon as one finishes (a goroutine
	// takes the next job from the queue, which makes room).
	submitted := make(chan error, 1)
	wg.Add(1)
	go func() { submitted <- a.submit(ctx, job) }()
	select {
	case err := <-submitted:
		t.Fatalf("submit returned (%v) while every goroutine was busy and the queue full", err)
	case <-time.After(50 * time.Millisecond):
	}
	release <- struct{}{}
	if err := <-submitted; err != nil {
		t.Fatal(err)
	}
	close(release)
	wg.Wait()
	if ran.Load() {
		t.Error("the job of a failed submit ran")
	}
	if got := peak.Load(); got != n {
		t.Errorf("peak concurrency %d, want %d", got, n)
	}

	// Once the binder's context ends, submit fails.
	cancel()
	if err := a.submit(context.Background(), func() {}); !errors.Is(err, context.Canceled) {
		t.Errorf("submit after the binder stopped: %v, want %v", err, context.Canceled)
	}
}

// TestAsyncBinderStages: gate lifts run on their own pool and hand the pod
// on through a bounded queue that the bind goroutines drain; a full queue
// holds the gate lifters back, and busy gate lifters the submits (the
// workers).
func TestAsyncBinderStages(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := NewAsyncBinder(ctx, AsyncOptions{Binds: 1, Ungates: 2, Queue: 1}, nil)

	// The one bind goroutine is busy until release.
	release := make(chan struct{})
	if err := a.submit(ctx, func() { <-release }); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var binds sync.WaitGroup
	lifted := make(chan string, 4)
	ungate := func(name string) func() {
		binds.Add(1)
		return func() {
			lifted <- name
			if err := a.enqueue(func() {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				binds.Done()
			}); err != nil {
				t.Errorf("enqueue %s: %v", name, err)
				binds.Done()
			}
		}
	}
	// The first lift fills the queue; the next two hold both gate
	// lifters, each waiting for room in it.
	for _, name := range []string{"a", "b", "c"} {
		if err := a.submitUngate(ctx, ungate(name)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-lifted:
		case <-time.After(10 * time.Second):
			t.Fatalf("gate of %s not lifted while the bind goroutine was busy", name)
		}
	}
	// Every gate lifter waits for the queue: a further submit waits until
	// its context ends.
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	ran := atomic.Bool{}
	if err := a.submitUngate(short, func() { ran.Store(true) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("submitUngate with the queue full and every gate lifter waiting: %v, want %v", err, context.DeadlineExceeded)
	}
	mu.Lock()
	if len(order) != 0 {
		t.Errorf("bound %v while the bind goroutine was busy", order)
	}
	mu.Unlock()

	close(release)
	binds.Wait()
	if ran.Load() {
		t.Error("the job of a failed submit ran")
	}
	mu.Lock()
	got := append([]string(nil), order...)
	mu.Unlock()
	if len(got) != 3 || got[0] != "a" {
		t.Errorf("bound %v, want a first (it was queued first), then b and c", got)
	}
}

func TestAsyncBinderBusyNil(t *testing.T) {
	var a *AsyncBinder
	if a.Busy("u") {
		t.Error("a nil binder reports a bind in flight")
	}
}

// TestResult: every way a cycle ends counts under kube-scheduler's
// schedule_attempts result names, and nothing is counted for a cycle that
// attempted nothing (a bind in flight, a hold) or handed its bind on.
func TestResult(t *testing.T) {
	got := map[string]string{}
	for name, st := range map[string]*framework.Status{
		"bound":        nil,
		"permit wait":  framework.NewStatus(framework.Wait, "hold: expression is false"),
		"fits nowhere": framework.NewStatus(framework.Unschedulable, "0/2 nodes are available"),
		"unresolvable": framework.NewStatus(framework.UnschedulableAndUnresolvable, "gone"),
		"lost a race":  framework.NewStatus(framework.Pending, "lost a race"),
		"api error":    framework.AsStatus(errors.New("boom")),
		"dispatched":   framework.NewStatus(framework.Skip, "bind dispatched"),
	} {
		got[name] = Result(st)
	}
	want := map[string]string{
		"bound":        metrics.ResultScheduled,
		"permit wait":  metrics.ResultWaiting,
		"fits nowhere": metrics.ResultUnschedulable,
		"unresolvable": metrics.ResultUnschedulable,
		"lost a race":  metrics.ResultError,
		"api error":    metrics.ResultError,
		"dispatched":   "",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
}

// TestForget: a pod deleted or bound elsewhere leaves nothing behind in the
// scheduler's memory (its hold, its announced permit deadline), unless this
// process is binding it right now (the bind cleans up itself).
func TestForget(t *testing.T) {
	for name, binding := range map[string]bool{"gone": false, "bind in flight": true} {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			s := &Scheduler{Clock: clk}
			p, pol := pod("f", "1", ""), policy()
			s.holdAfterPermitTimeout(p.UID)
			s.waits.Store(p.UID, clk.Now())
			if binding {
				s.binding.Store(p.UID, struct{}{})
			}
			s.Forget(t.Context(), p)
			_, waitKept := s.waits.Load(p.UID)
			holdKept := s.permitHoldOff(p, pol) > 0
			if waitKept != binding || holdKept != binding {
				t.Errorf("after Forget: wait kept %t, hold kept %t; want both %t", waitKept, holdKept, binding)
			}
		})
	}
}

// TestUnfitStreak: the guard under Reserve may refuse a node a few cycles in
// a row (races with the informer); the maxUnfitStreak-th refusal in a row
// marks the pod unschedulable and the count starts again; another pod's
// count is its own.
func TestUnfitStreak(t *testing.T) {
	s := &Scheduler{}
	var got []bool
	for range 2*maxUnfitStreak + 1 {
		got = append(got, s.unfitAgain("a"))
	}
	want := make([]bool, 2*maxUnfitStreak+1)
	want[maxUnfitStreak-1], want[2*maxUnfitStreak-1] = true, true
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("streak of pod a (-want +got):\n%s", diff)
	}
	if s.unfitAgain("b") {
		t.Error("pod b's first refusal ends its streak")
	}
	s.unfitStreaks.Delete(types.UID("b")) // a reservation taken
	for range maxUnfitStreak - 1 {
		if s.unfitAgain("b") {
			t.Fatal("pod b's streak ended early after it started again")
		}
	}
}

// TestScheduleAfterBind: a cycle that read the pod before its bind and runs
// after it (the informer has not shown the bind yet) places nothing: the
// pod is bound. Placing it again would reserve it twice and let
// DynamicResources' PostFilter delete the claim of the devices it was bound
// with.
func TestScheduleAfterBind(t *testing.T) {
	for name, bound := range map[string]func(*cache.Cache, *corev1.Pod){
		"bound by this process, informer behind": func(c *cache.Cache, p *corev1.Pod) { c.CountBound(p) },
		"informer shows the bind":                func(c *cache.Cache, p *corev1.Pod) { c.UpsertPod(p) },
	} {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			c := cache.New(t.Context(), clk)
			c.UpsertNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
			bound(c, pod("b", "1", "n1"))
			s := &Scheduler{Clock: clk, Cache: c}
			stale := pod("b", "1", "")
			st, after := s.Schedule(t.Context(), stale, policy())
			if st.Code() != framework.Skip || after != 0 {
				t.Errorf("Schedule of a bound pod read before its bind = %v, %v; want Skip, 0", st, after)
			}
			if _, held := c.Reserved(stale.UID); held {
				t.Errorf("the bound pod holds a reservation")
			}
		})
	}
}
