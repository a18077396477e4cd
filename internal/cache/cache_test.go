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

package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	clocktesting "k8s.io/utils/clock/testing"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/metrics"
)

func testNode(name, cpu string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}}}
}

func testPod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

var testPolicy = &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}}

func requestedCPU(c *Cache, node string) int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.nodes[node].requested.MilliCPU
}

// TestConcurrentReserveNeverOvercommits: 64 goroutines reserve 100m pods on
// a 4-CPU node; exactly 40 succeed.
func TestConcurrentReserveNeverOvercommits(t *testing.T) {
	c := New(context.Background(), nil)
	c.UpsertNode(testNode("n1", "4"))
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := testPod(fmt.Sprintf("p%d", i), "100m")
			if c.Reserve(p, framework.PodRequests(p), "n1", testPolicy, time.Time{}) == nil {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 40 || requestedCPU(c, "n1") != 4000 {
		t.Fatalf("%d reservations, %dm requested; want 40 and 4000m", ok.Load(), requestedCPU(c, "n1"))
	}
}

// TestBindLifecycleCountsOnce walks a pod through reserve, bind, a stale
// re-reserve, the informer's bind and termination, checking the node's
// requested cpu at each step.
func TestBindLifecycleCountsOnce(t *testing.T) {
	c := New(context.Background(), nil)
	c.UpsertNode(testNode("n1", "4"))
	p := testPod("a", "1")
	steps := []struct {
		name    string
		do      func() error
		wantCPU int64
		wantErr error
	}{
		{"reserve", func() error { return c.Reserve(p, framework.PodRequests(p), "n1", testPolicy, time.Time{}) }, 1000, nil},
		{"reserve again is idempotent", func() error { return c.Reserve(p, framework.PodRequests(p), "n1", testPolicy, time.Time{}) }, 1000, nil},
		{"bound: still counted until the informer shows it", func() error { c.Unreserve(p.UID, true); return nil }, 1000, nil},
		{"a stale read reserving again is refused", func() error { return c.Reserve(p, framework.PodRequests(p), "n1", testPolicy, time.Time{}) }, 1000, ErrBound},
		{"informer shows the bind", func() error {
			b := p.DeepCopy()
			b.Spec.NodeName = "n1"
			c.UpsertPod(b)
			return nil
		}, 1000, nil},
		{"pod terminates", func() error {
			b := p.DeepCopy()
			b.Spec.NodeName = "n1"
			b.Status.Phase = corev1.PodSucceeded
			c.UpsertPod(b)
			return nil
		}, 0, nil},
	}
	for _, s := range steps {
		err := s.do()
		if !errors.Is(err, s.wantErr) {
			t.Fatalf("%s: err = %v, want %v", s.name, err, s.wantErr)
		}
		if got := requestedCPU(c, "n1"); got != s.wantCPU {
			t.Fatalf("%s: requested %dm, want %dm", s.name, got, s.wantCPU)
		}
	}
}

// TestCountBound: a pod seen bound by a live read before the informer shows
// it counts once, whatever the informer shows next, and no longer than the
// grace when the informer never shows it (deleted before the read).
func TestCountBound(t *testing.T) {
	bound := func(name, cpu string) *corev1.Pod {
		p := testPod(name, cpu)
		p.Spec.NodeName = "n1"
		return p
	}
	cases := map[string]struct {
		steps   func(c *Cache, clk *clocktesting.FakeClock)
		wantCPU int64
	}{
		"counted": {
			steps:   func(c *Cache, _ *clocktesting.FakeClock) { c.CountBound(bound("a", "1")) },
			wantCPU: 1000,
		},
		"twice counts once": {
			steps: func(c *Cache, _ *clocktesting.FakeClock) {
				c.CountBound(bound("a", "1"))
				c.CountBound(bound("a", "1"))
			},
			wantCPU: 1000,
		},
		"the informer then shows it bound: counted once": {
			steps: func(c *Cache, _ *clocktesting.FakeClock) {
				c.CountBound(bound("a", "1"))
				c.UpsertPod(bound("a", "1"))
			},
			wantCPU: 1000,
		},
		"confirmed by the informer, it outlives the grace": {
			steps: func(c *Cache, clk *clocktesting.FakeClock) {
				c.CountBound(bound("a", "1"))
				c.UpsertPod(bound("a", "1"))
				clk.Step(time.Hour)
				c.ExpireReleased()
			},
			wantCPU: 1000,
		},
		"the informer already counts it": {
			steps: func(c *Cache, _ *clocktesting.FakeClock) {
				c.UpsertPod(bound("a", "1"))
				c.CountBound(bound("a", "1"))
			},
			wantCPU: 1000,
		},
		"the informer shows it deleted": {
			steps: func(c *Cache, _ *clocktesting.FakeClock) {
				c.CountBound(bound("a", "1"))
				c.DeletePod("uid-a")
			},
			wantCPU: 0,
		},
		"never confirmed: gone after the grace": {
			steps: func(c *Cache, clk *clocktesting.FakeClock) {
				c.CountBound(bound("a", "1"))
				clk.Step(releasedGrace + time.Second)
				c.ExpireReleased()
			},
			wantCPU: 0,
		},
		"unbound and terminal pods are not counted": {
			steps: func(c *Cache, _ *clocktesting.FakeClock) {
				c.CountBound(testPod("a", "1"))
				done := bound("b", "1")
				done.Status.Phase = corev1.PodSucceeded
				c.CountBound(done)
			},
			wantCPU: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			c := New(context.Background(), clk)
			c.UpsertNode(testNode("n1", "4"))
			tc.steps(c, clk)
			if got := requestedCPU(c, "n1"); got != tc.wantCPU {
				t.Errorf("requested %dm, want %dm", got, tc.wantCPU)
			}
		})
	}
}

func TestUnreserveWithoutBindFreesAtOnce(t *testing.T) {
	c := New(context.Background(), nil)
	c.UpsertNode(testNode("n1", "4"))
	p := testPod("a", "3")
	pol := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "gauge"}}
	if err := c.Reserve(p, framework.PodRequests(p), "n1", pol, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(metrics.Reservations.WithLabelValues("gauge")); got != 1 {
		t.Fatalf("bindgate_reservations{policy=gauge} = %v, want 1", got)
	}
	c.Unreserve(p.UID, false)
	c.Unreserve(p.UID, false) // idempotent
	if got := requestedCPU(c, "n1"); got != 0 {
		t.Fatalf("requested %dm after unreserve, want 0", got)
	}
	if got := testutil.ToFloat64(metrics.Reservations.WithLabelValues("gauge")); got != 0 {
		t.Fatalf("bindgate_reservations{policy=gauge} = %v after unreserve, want 0", got)
	}
}

func TestBudget(t *testing.T) {
	c := New(context.Background(), nil)
	c.UpsertNode(testNode("n1", "8"))
	pol := testPolicy.DeepCopy()
	pol.Spec.Capacity = map[corev1.ResourceName]bindgatev1alpha1.CapacityQuantity{corev1.ResourceCPU: {Quantity: resource.MustParse("2")}}
	a, b := testPod("a", "1500m"), testPod("b", "1")
	if err := c.Reserve(a, framework.PodRequests(a), "n1", pol, time.Time{}); err != nil {
		t.Fatal(err)
	}
	var unfit *UnfitError
	if err := c.Reserve(b, framework.PodRequests(b), "n1", pol, time.Time{}); !errors.As(err, &unfit) {
		t.Fatalf("err = %v, want the budget to refuse", err)
	}
}

// TestReservationIsAssumed: a reservation is an assumed pod on its node in
// the snapshot kube-scheduler's plugins read, and leaves it on Unreserve.
func TestReservationIsAssumed(t *testing.T) {
	c := New(context.Background(), nil)
	c.UpsertNode(testNode("n1", "4"))
	p := testPod("a", "1")
	p.Labels = map[string]string{"app": "db"}
	if err := c.Reserve(p, framework.PodRequests(p), "n1", testPolicy, time.Time{}); err != nil {
		t.Fatal(err)
	}
	snap := kcache.NewEmptySnapshot()
	podsOn := func() []string {
		if _, err := c.UpdateSnapshot(snap); err != nil {
			t.Fatal(err)
		}
		ni, err := snap.Get("n1")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, pi := range ni.GetPods() {
			out = append(out, pi.GetPod().Name+"@"+pi.GetPod().Spec.NodeName+"/"+pi.GetPod().Labels["app"])
		}
		return out
	}
	if diff := cmp.Diff([]string{"a@n1/db"}, podsOn()); diff != "" {
		t.Fatalf("pods on n1 after Reserve (-want +got):\n%s", diff)
	}
	if p.Spec.NodeName != "" {
		t.Fatal("Reserve changed the caller's pod")
	}
	c.Unreserve(p.UID, false)
	if diff := cmp.Diff([]string(nil), podsOn()); diff != "" {
		t.Fatalf("pods on n1 after Unreserve (-want +got):\n%s", diff)
	}
}

// TestRecordedReservationUsesThePod: a reservation read from a policy's
// status is assumed as the pod the informer shows (labels included), or as a
// stand-in with its recorded requests when the pod is unknown.
func TestRecordedReservationUsesThePod(t *testing.T) {
	c := New(context.Background(), nil)
	c.UpsertNode(testNode("n1", "4"))
	known := testPod("known", "1")
	known.Labels = map[string]string{"app": "web"}
	rec := func(p *corev1.Pod) *bindgatev1alpha1.Reservation {
		return &bindgatev1alpha1.Reservation{PodNamespace: p.Namespace, PodName: p.Name, PodUID: p.UID, Node: "n1",
			Resources: framework.PodRequests(p).ResourceList()}
	}
	c.AddRecorded("p", rec(known), func(*bindgatev1alpha1.Reservation) *corev1.Pod { return known })
	c.AddRecorded("p", rec(testPod("unknown", "2")), func(*bindgatev1alpha1.Reservation) *corev1.Pod { return nil })
	snap := kcache.NewEmptySnapshot()
	if _, err := c.UpdateSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	ni, _ := snap.Get("n1")
	got := map[string]string{}
	for _, pi := range ni.GetPods() {
		got[pi.GetPod().Name] = pi.GetPod().Labels["app"]
	}
	if diff := cmp.Diff(map[string]string{"known": "web", "unknown": ""}, got); diff != "" {
		t.Errorf("assumed pods (-want +got):\n%s", diff)
	}
	if got := requestedCPU(c, "n1"); got != 3000 {
		t.Errorf("requested %dm, want 3000m", got)
	}
}

// TestDeletedPodHoldsNothing: once the informer showed a pod deleted, a
// cycle that read it before cannot reserve for it, and a policy event that
// still carries its record neither counts it nor is taken for a live
// reservation (void: the caller releases the record); the UID is forgotten
// after deletedMemory.
func TestDeletedPodHoldsNothing(t *testing.T) {
	type result struct {
		ReserveErr string
		Void       bool
		CPU        int64
	}
	record := &bindgatev1alpha1.Reservation{PodNamespace: "ns", PodName: "a", PodUID: "uid-a", Node: "n1",
		Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	cases := map[string]struct {
		steps func(c *Cache, clk *clocktesting.FakeClock) result
		want  result
	}{
		"reserved after it was deleted": {
			steps: func(c *Cache, _ *clocktesting.FakeClock) result {
				c.DeletePod("uid-a")
				p := testPod("a", "1")
				err := c.Reserve(p, framework.PodRequests(p), "n1", testPolicy, time.Time{})
				return result{ReserveErr: fmt.Sprint(errors.Is(err, ErrDeleted))}
			},
			want: result{ReserveErr: "true"},
		},
		"reserved, then deleted: released": {
			steps: func(c *Cache, _ *clocktesting.FakeClock) result {
				p := testPod("a", "1")
				err := c.Reserve(p, framework.PodRequests(p), "n1", testPolicy, time.Time{})
				c.DeletePod("uid-a")
				return result{ReserveErr: fmt.Sprint(err)}
			},
			want: result{ReserveErr: "<nil>"},
		},
		"its record seen after it was deleted": {
			steps: func(c *Cache, _ *clocktesting.FakeClock) result {
				c.DeletePod("uid-a")
				return result{Void: c.AddRecorded("p", record, nil)}
			},
			want: result{Void: true},
		},
		"a record of a live pod is counted": {
			steps: func(c *Cache, _ *clocktesting.FakeClock) result {
				return result{Void: c.AddRecorded("p", record, nil)}
			},
			want: result{CPU: 1000},
		},
		"forgotten after deletedMemory": {
			steps: func(c *Cache, clk *clocktesting.FakeClock) result {
				c.DeletePod("uid-a")
				clk.Step(deletedMemory + time.Second)
				c.ExpireReleased()
				return result{Void: c.AddRecorded("p", record, nil)}
			},
			want: result{CPU: 1000},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			c := New(context.Background(), clk)
			c.UpsertNode(testNode("n1", "4"))
			got := tc.steps(c, clk)
			got.CPU = requestedCPU(c, "n1")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestInsufficient: the guard under Reserve words a shortage as
// NodeResourcesFit does, and leaves alone an extended resource the node does
// not advertise (a DeviceClass backs it: DynamicResources holds its device).
func TestInsufficient(t *testing.T) {
	const gpu, dra = corev1.ResourceName("example.com/gpu"), corev1.ResourceName("bindgate.test/dra")
	node := testNode("n1", "2")
	node.Status.Allocatable[gpu] = resource.MustParse("1")
	pod := func(cpu string, scalar ...corev1.ResourceName) *corev1.Pod {
		p := testPod("p", cpu)
		for _, s := range scalar {
			p.Spec.Containers[0].Resources.Requests[s] = resource.MustParse("1")
		}
		return p
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want []string
	}{
		"fits":                                 {pod: pod("1", gpu), want: nil},
		"cpu short":                            {pod: pod("3"), want: []string{"Insufficient cpu"}},
		"DRA-backed resource is not checked":   {pod: pod("1", dra), want: nil},
		"cpu short, DRA-backed resource named": {pod: pod("3", dra), want: []string{"Insufficient cpu"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := New(context.Background(), nil)
			c.UpsertNode(node)
			var got []string
			var unfit *UnfitError
			if err := c.Reserve(tc.pod, framework.PodRequests(tc.pod), "n1", testPolicy, time.Time{}); errors.As(err, &unfit) {
				got = unfit.Reasons
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
	// A second pod asking for the node's one advertised gpu is short.
	c := New(context.Background(), nil)
	c.UpsertNode(node)
	first, second := pod("100m", gpu), pod("100m", gpu)
	second.Name, second.UID = "q", "uid-q"
	if err := c.Reserve(first, framework.PodRequests(first), "n1", testPolicy, time.Time{}); err != nil {
		t.Fatal(err)
	}
	var unfit *UnfitError
	if err := c.Reserve(second, framework.PodRequests(second), "n1", testPolicy, time.Time{}); !errors.As(err, &unfit) || cmp.Diff([]string{"Insufficient example.com/gpu"}, unfit.Reasons) != "" {
		t.Errorf("second gpu pod: %v, want Insufficient example.com/gpu", err)
	}
}

// TestRecordOfABoundPod: a record read from a policy's status for a pod
// known bound holds nothing there, and is void (the caller releases it)
// when the informer shows the pod bound, or it is known bound to another
// node; the record of this process's own bind on that node, not shown by
// the informer yet, is left to the release already under way.
func TestRecordOfABoundPod(t *testing.T) {
	type result struct {
		Void bool
		CPU  map[string]int64
	}
	onN1 := func(p *corev1.Pod) *corev1.Pod { p = p.DeepCopy(); p.Spec.NodeName = "n1"; return p }
	cases := map[string]struct {
		state func(c *Cache, p *corev1.Pod)
		node  string // the record's
		want  result
	}{
		"shown bound by the informer, recorded on another node": {
			state: func(c *Cache, p *corev1.Pod) { c.UpsertPod(onN1(p)) },
			node:  "n2",
			want:  result{Void: true, CPU: map[string]int64{"n1": 1000, "n2": 0}},
		},
		"shown bound by the informer, recorded on its node": {
			state: func(c *Cache, p *corev1.Pod) { c.UpsertPod(onN1(p)) },
			node:  "n1",
			want:  result{Void: true, CPU: map[string]int64{"n1": 1000, "n2": 0}},
		},
		"bound by this process, recorded on another node": {
			state: func(c *Cache, p *corev1.Pod) {
				_ = c.Reserve(p, framework.PodRequests(p), "n1", testPolicy, time.Time{})
				c.Unreserve(p.UID, true)
			},
			node: "n2",
			want: result{Void: true, CPU: map[string]int64{"n1": 1000, "n2": 0}},
		},
		"bound by this process, its own record": {
			state: func(c *Cache, p *corev1.Pod) {
				_ = c.Reserve(p, framework.PodRequests(p), "n1", testPolicy, time.Time{})
				c.Unreserve(p.UID, true)
			},
			node: "n1",
			want: result{CPU: map[string]int64{"n1": 1000, "n2": 0}},
		},
		"seen bound by a live read on another node": {
			state: func(c *Cache, p *corev1.Pod) { c.CountBound(onN1(p)) },
			node:  "n2",
			want:  result{Void: true, CPU: map[string]int64{"n1": 1000, "n2": 0}},
		},
		"reserved by this process on another node: not bound, not void": {
			state: func(c *Cache, p *corev1.Pod) {
				_ = c.Reserve(p, framework.PodRequests(p), "n1", testPolicy, time.Time{})
			},
			node: "n2",
			want: result{CPU: map[string]int64{"n1": 1000, "n2": 0}},
		},
		"unknown: counted on the recorded node": {
			state: func(*Cache, *corev1.Pod) {},
			node:  "n2",
			want:  result{CPU: map[string]int64{"n1": 0, "n2": 1000}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := New(context.Background(), nil)
			c.UpsertNode(testNode("n1", "4"))
			c.UpsertNode(testNode("n2", "4"))
			p := testPod("a", "1")
			tc.state(c, p)
			r := &bindgatev1alpha1.Reservation{PodNamespace: p.Namespace, PodName: p.Name, PodUID: p.UID, Node: tc.node,
				Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
			got := result{Void: c.AddRecorded("p", r, nil), CPU: map[string]int64{"n1": requestedCPU(c, "n1"), "n2": requestedCPU(c, "n2")}}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestOvercommittedWith: the ledger's check before a write with several
// replicas active counts, on the node in question, every record of it in
// the status and every pod the API server lists bound there that the cache
// does not count there already; records of pods known bound elsewhere or
// deleted hold nothing.
func TestOvercommittedWith(t *testing.T) {
	// n1 has 2 CPUs; the cache holds "mine" (1 CPU) on n1 and "w" (600m),
	// this process's own reservation, on n2.
	rec := func(name, node, cpu string) bindgatev1alpha1.Reservation {
		return bindgatev1alpha1.Reservation{PodNamespace: "ns", PodName: name, PodUID: types.UID("uid-" + name), Node: node,
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	}
	bound := func(name, node, cpu string) corev1.Pod {
		p := testPod(name, cpu)
		p.Spec.NodeName = node
		return *p
	}
	cases := map[string]struct {
		state   func(c *Cache)
		records []bindgatev1alpha1.Reservation
		bound   []corev1.Pod
		want    []string
	}{
		"room left": {},
		"the other replica's record of a pod the cache counts elsewhere": {
			records: []bindgatev1alpha1.Reservation{rec("w", "n1", "1100m")},
			want:    []string{"cpu"},
		},
		"a record the cache counts on this node already": {
			records: []bindgatev1alpha1.Reservation{rec("mine", "n1", "1")},
		},
		"a record of a pod the cache does not count (released meanwhile)": {
			records: []bindgatev1alpha1.Reservation{rec("gone-from-memory", "n1", "1100m")},
			want:    []string{"cpu"},
		},
		"a record of a pod known bound elsewhere": {
			state:   func(c *Cache) { c.UpsertPod(ptr(bound("b", "n2", "1100m"))) },
			records: []bindgatev1alpha1.Reservation{rec("b", "n1", "1100m")},
		},
		"a record of a deleted pod": {
			state:   func(c *Cache) { c.DeletePod("uid-d") },
			records: []bindgatev1alpha1.Reservation{rec("d", "n1", "1100m")},
		},
		"a record of another node": {
			records: []bindgatev1alpha1.Reservation{rec("x", "n2", "1100m")},
		},
		"a pod listed bound here that the cache counts elsewhere": {
			bound: []corev1.Pod{bound("w", "n1", "1100m")},
			want:  []string{"cpu"},
		},
		"a pod listed bound here and recorded here counts once": {
			records: []bindgatev1alpha1.Reservation{rec("y", "n1", "600m")},
			bound:   []corev1.Pod{bound("y", "n1", "600m")},
		},
		"a pod listed bound here that ended holds nothing": {
			bound: []corev1.Pod{func() corev1.Pod {
				p := bound("z", "n1", "1100m")
				p.Status.Phase = corev1.PodSucceeded
				return p
			}()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := New(context.Background(), nil)
			c.UpsertNode(testNode("n1", "2"))
			c.UpsertNode(testNode("n2", "4"))
			for _, p := range []struct{ name, node, cpu string }{{"mine", "n1", "1"}, {"w", "n2", "600m"}} {
				pod := testPod(p.name, p.cpu)
				if err := c.Reserve(pod, framework.PodRequests(pod), p.node, testPolicy, time.Time{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.state != nil {
				tc.state(c)
			}
			got := c.OvercommittedWith("n1", tc.records, tc.bound)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("overcommitted on (-want +got):\n%s", diff)
			}
			if got := requestedCPU(c, "n1"); got != 1000 {
				t.Errorf("the check changed the cache: n1 has %dm requested, want 1000m", got)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestReserveRefusesARecordedReservation: a pod held by a reservation
// counted from a policy's status (another replica's record, arrived while
// this process placed the pod) is not taken as this process's own, on its
// node or another; one taken again as it was (MarkRecorded) stays refused.
func TestReserveRefusesARecordedReservation(t *testing.T) {
	for name, node := range map[string]string{"same node": "n1", "another node": "n2"} {
		t.Run(name, func(t *testing.T) {
			c := New(context.Background(), nil)
			c.UpsertNode(testNode("n1", "4"))
			c.UpsertNode(testNode("n2", "4"))
			p := testPod("a", "1")
			c.AddRecorded("p", &bindgatev1alpha1.Reservation{PodNamespace: p.Namespace, PodName: p.Name, PodUID: p.UID, Node: "n1",
				Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}, nil)
			if err := c.Reserve(p, framework.PodRequests(p), node, testPolicy, time.Time{}); !errors.Is(err, ErrRecorded) {
				t.Fatalf("Reserve: %v, want ErrRecorded", err)
			}
			if res, held := c.Reserved(p.UID); !held || !res.Recorded || res.Node != "n1" {
				t.Fatalf("Reserved = %+v, %v; want the record on n1", res, held)
			}
			c.Unreserve(p.UID, false)
			if err := c.Reserve(p, framework.PodRequests(p), "n1", testPolicy, time.Time{}); err != nil {
				t.Fatal(err)
			}
			c.MarkRecorded(p.UID)
			if err := c.Reserve(p, framework.PodRequests(p), "n1", testPolicy, time.Time{}); !errors.Is(err, ErrRecorded) {
				t.Fatalf("Reserve after MarkRecorded: %v, want ErrRecorded", err)
			}
			if got := requestedCPU(c, "n1") + requestedCPU(c, "n2"); got != 1000 {
				t.Errorf("requested %dm in all, want 1000m", got)
			}
		})
	}
}
