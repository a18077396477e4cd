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
	"fmt"
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
	"github.com/bindgate/bindgate/internal/filter"
	"github.com/bindgate/bindgate/internal/framework"
)

// nodeBuilder builds a schedulable node with 4 CPU, 8Gi and 110 pods.
type nodeBuilder struct{ n *corev1.Node }

func node(name string) *nodeBuilder {
	return &nodeBuilder{n: &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods: resource.MustParse("110"),
		}},
	}}
}

func (b *nodeBuilder) label(k, v string) *nodeBuilder { b.n.Labels[k] = v; return b }
func (b *nodeBuilder) unschedulable() *nodeBuilder    { b.n.Spec.Unschedulable = true; return b }
func (b *nodeBuilder) obj() *corev1.Node              { return b.n }

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

func withNodeSelector(k, v string) func(*bindgatev1alpha1.BindingPolicy) {
	return func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
}

func withStrategy(s bindgatev1alpha1.ScoringStrategyType) func(*bindgatev1alpha1.BindingPolicy) {
	return func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.Scoring = &bindgatev1alpha1.Scoring{Strategy: s}
	}
}

func newScheduler(nodes []*corev1.Node, bound []*corev1.Pod) *Scheduler {
	c := cache.New(nil)
	for _, n := range nodes {
		c.UpsertNode(n)
	}
	for _, p := range bound {
		c.UpsertPod(p)
	}
	return &Scheduler{Cache: c, Filters: DefaultFilters()}
}

func TestSelectNode(t *testing.T) {
	cases := map[string]struct {
		nodes  []*corev1.Node
		bound  []*corev1.Pod
		policy *bindgatev1alpha1.BindingPolicy
		pod    *corev1.Pod
		want   string
		// wantErr is the FitError's message when no node fits.
		wantErr string
	}{
		"least allocated node wins": {
			nodes:  []*corev1.Node{node("a").obj(), node("b").obj(), node("c").obj()},
			bound:  []*corev1.Pod{pod("on-a", "2", "a"), pod("on-c", "1", "c")},
			policy: policy(),
			pod:    pod("new", "500m", ""),
			want:   "b",
		},
		"most allocated node wins under MostAllocated": {
			nodes:  []*corev1.Node{node("a").obj(), node("b").obj(), node("c").obj()},
			bound:  []*corev1.Pod{pod("on-a", "2", "a"), pod("on-c", "1", "c")},
			policy: policy(withStrategy(bindgatev1alpha1.MostAllocated)),
			pod:    pod("new", "500m", ""),
			want:   "a",
		},
		"a tie goes to the node visited first": {
			nodes:  []*corev1.Node{node("z").obj(), node("a").obj(), node("m").obj()},
			policy: policy(),
			pod:    pod("new", "500m", ""),
			want:   "z",
		},
		"only the policy's nodes": {
			nodes:  []*corev1.Node{node("a").obj(), node("b").label("pool", "gpu").obj()},
			bound:  []*corev1.Pod{pod("on-b", "3", "b")},
			policy: policy(withNodeSelector("pool", "gpu")),
			pod:    pod("new", "500m", ""),
			want:   "b",
		},
		"full and unschedulable nodes are left out": {
			nodes:  []*corev1.Node{node("full").obj(), node("cordoned").unschedulable().obj(), node("free").obj()},
			bound:  []*corev1.Pod{pod("on-full", "4", "full")},
			policy: policy(),
			pod:    pod("new", "1", ""),
			want:   "free",
		},
		"no node fits: each node counted once, under the first filter that fails": {
			nodes: []*corev1.Node{
				node("full").obj(), node("cordoned").unschedulable().obj(), node("other").label("pool", "x").obj(),
				node("full2").label("pool", "gpu").obj(),
			},
			bound:   []*corev1.Pod{pod("on-full2", "4", "full2")},
			policy:  policy(withNodeSelector("pool", "gpu")),
			pod:     pod("new", "1", ""),
			wantErr: "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable, 2 node(s) didn't match policy nodeSelector.",
		},
		"no nodes at all": {
			policy:  policy(),
			pod:     pod("new", "1", ""),
			wantErr: "0/0 nodes are available.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newScheduler(tc.nodes, tc.bound)
			got, fe := s.selectNode(context.Background(), framework.NewCycleState(tc.policy, tc.pod), tc.pod)
			if got != tc.want {
				t.Errorf("node: got %q, want %q", got, tc.want)
			}
			gotErr := ""
			if fe != nil {
				gotErr = fe.Error()
			}
			if gotErr != tc.wantErr {
				t.Errorf("fit error: got %q, want %q", gotErr, tc.wantErr)
			}
		})
	}
}

// TestSelectNodeRotates: on a cluster large enough to be sampled, equal
// nodes take turns, because each walk starts where the previous one stopped.
func TestSelectNodeRotates(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 120 {
		nodes = append(nodes, node(fmt.Sprintf("n-%03d", i)).obj())
	}
	s := newScheduler(nodes, nil)
	s.PercentageOfNodesToScore = 50 // 60 nodes, raised to the minimum of 100
	p := pod("new", "100m", "")
	state := framework.NewCycleState(policy(), p)
	var got []string
	for range 3 {
		n, fe := s.selectNode(context.Background(), state, p)
		if fe != nil {
			t.Fatal(fe)
		}
		got = append(got, n)
	}
	// 100 nodes per walk: 0..99, then 100..119 and 0..79, then 80..119 and 0..59.
	if diff := cmp.Diff([]string{"n-000", "n-100", "n-080"}, got); diff != "" {
		t.Errorf("chosen nodes (-want +got):\n%s", diff)
	}
}

func TestFitErrorMessage(t *testing.T) {
	cases := map[string]struct {
		fe   *FitError
		want string
	}{
		"no reasons": {fe: &FitError{NumAllNodes: 3, Reasons: map[string]int{}}, want: "0/3 nodes are available."},
		"reasons sorted": {
			fe: &FitError{NumAllNodes: 12, Reasons: map[string]int{
				filter.ReasonPolicyNodeSelector: 8, "Insufficient cpu": 4,
			}},
			want: "0/12 nodes are available: 4 Insufficient cpu, 8 node(s) didn't match policy nodeSelector.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.fe.Error(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPermitHoldBackoff: each permit timeout in a row doubles the hold, up
// to five minutes; the hold counts down with the clock.
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

func TestMustRecord(t *testing.T) {
	cases := map[string]struct {
		always bool
		policy *bindgatev1alpha1.BindingPolicy
		want   bool
	}{
		"plain policy binds from memory": {policy: policy(), want: false},
		"--durable-reservations=always":  {always: true, policy: policy(), want: true},
		"permit conditions": {policy: policy(func(p *bindgatev1alpha1.BindingPolicy) {
			p.Spec.Permit = &bindgatev1alpha1.Permit{Conditions: []bindgatev1alpha1.PermitCondition{{Name: "c"}}}
		}), want: true},
		"permit without conditions": {policy: policy(func(p *bindgatev1alpha1.BindingPolicy) {
			p.Spec.Permit = &bindgatev1alpha1.Permit{}
		}), want: false},
		"bind webhook": {policy: policy(func(p *bindgatev1alpha1.BindingPolicy) {
			p.Spec.Bind = &bindgatev1alpha1.Bind{Webhook: &bindgatev1alpha1.Webhook{}}
		}), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &Scheduler{DurableAlways: tc.always}
			if got := s.mustRecord(tc.policy); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAsyncBinderConcurrency: at most Concurrency jobs run at once, a
// submit past that waits for a free goroutine, and one whose context ends
// while it waits fails without running its job.
func TestAsyncBinderConcurrency(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 3
	a := NewAsyncBinder(ctx, n, nil)
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
	for range n {
		wg.Add(1)
		if err := a.submit(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	// Every goroutine is busy: a further submit waits until its context ends.
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	ran := atomic.Bool{}
	if err := a.submit(short, func() { ran.Store(true) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("submit with every goroutine busy: %v, want %v", err, context.DeadlineExceeded)
	}
	// A waiting submit goes through as soon as one finishes.
	submitted := make(chan error, 1)
	wg.Add(1)
	go func() { submitted <- a.submit(ctx, job) }()
	select {
	case err := <-submitted:
		t.Fatalf("submit returned (%v) while every goroutine was busy", err)
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

func TestAsyncBinderBusyNil(t *testing.T) {
	var a *AsyncBinder
	if a.Busy("u") {
		t.Error("a nil binder reports a bind in flight")
	}
}
