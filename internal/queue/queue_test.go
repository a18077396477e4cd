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

package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/bindgate/bindgate/internal/queue"
)

// started returns q with a controller's priority queue behind it.
func started(t *testing.T, q *queue.Queue) priorityqueue.PriorityQueue[reconcile.Request] {
	t.Helper()
	pq := priorityqueue.New[reconcile.Request](fmt.Sprintf("test-%s", t.Name()))
	t.Cleanup(pq.ShutDown)
	var wq workqueue.TypedRateLimitingInterface[reconcile.Request] = pq
	if err := q.Source().Start(context.Background(), wq); err != nil {
		t.Fatal(err)
	}
	return pq
}

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

// drain returns the names of the keys ready in pq.
func drain(pq priorityqueue.PriorityQueue[reconcile.Request]) []string {
	var got []string
	for pq.Len() > 0 {
		req, _ := pq.Get()
		got = append(got, req.Name)
		pq.Done(req)
	}
	return got
}

// TestActivateNeverDrops: adds from outside Reconcile go into the
// controller's queue, however many there are (a buffered channel used to
// drop them once 4096 were pending), once per key.
func TestActivateNeverDrops(t *testing.T) {
	q := queue.New(nil, nil)
	q.Activate(key("early")) // no controller queue yet: nothing happens
	pq := started(t, q)
	const n = 5000
	for i := range n {
		q.Activate(key(fmt.Sprintf("pod-%d", i)))
	}
	q.Activate(key("pod-0"))
	if got := pq.Len(); got != n {
		t.Errorf("queue holds %d keys, want %d", got, n)
	}
}

// TestBackoff: client-go's per-item exponential limiter, 1s doubling to
// 30s; Attempts counts the failures; Forget starts over.
func TestBackoff(t *testing.T) {
	q := queue.New(nil, nil)
	var got []time.Duration
	for range 8 {
		got = append(got, q.Backoff("a"))
	}
	want := []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backoff (-want +got):\n%s", diff)
	}
	if n := q.Attempts("a"); n != 8 {
		t.Errorf("Attempts = %d, want 8", n)
	}
	if n := q.Attempts("b"); n != 0 {
		t.Errorf("Attempts of another pod = %d, want 0", n)
	}
	q.Forget(key("a"), "a")
	if d := q.Backoff("a"); d != time.Second {
		t.Errorf("backoff after Forget = %v, want 1s", d)
	}
}

// TestMoveAllToActive: unschedulable pods go back to active on a cluster
// change (after onMove), until they are forgotten.
func TestMoveAllToActive(t *testing.T) {
	moves := 0
	q := queue.New(nil, func() { moves++ })
	pq := started(t, q)
	for _, n := range []string{"a", "b", "c"} {
		q.MarkUnschedulable(key(n))
	}
	q.Forget(key("b"), "")
	q.MoveAllToActive()
	got := drain(pq)
	if diff := cmp.Diff(map[string]bool{"a": true, "c": true}, set(got)); diff != "" {
		t.Errorf("moved (-want +got):\n%s", diff)
	}
	q.MoveToActive(key("d"))
	if diff := cmp.Diff([]string{"d"}, drain(pq)); diff != "" {
		t.Errorf("MoveToActive (-want +got):\n%s", diff)
	}
	if moves != 2 {
		t.Errorf("onMove ran %d times, want 2", moves)
	}
}

func set(s []string) map[string]bool {
	m := map[string]bool{}
	for _, v := range s {
		m[v] = true
	}
	return m
}

// TestDone: the time since the pod was first seen, by the injected clock;
// the pod is forgotten.
func TestDone(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	q := queue.New(clk, nil)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p"}}
	if _, ok := q.Done(pod); ok {
		t.Fatal("Done of a pod never seen reports a duration")
	}
	q.Seen(pod.UID)
	clk.Step(3 * time.Second)
	q.Seen(pod.UID) // the first sighting counts
	q.Backoff(pod.UID)
	since, ok := q.Done(pod)
	if !ok || since != 3*time.Second {
		t.Errorf("Done = %v, %v; want 3s, true", since, ok)
	}
	if n := q.Attempts(pod.UID); n != 0 {
		t.Errorf("Attempts after Done = %d, want 0", n)
	}
}
