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
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/ledger"
	"github.com/bindgate/bindgate/internal/testenv"
)

// TestPodDeletedBetweenTheStages: against a real API server, a gated pod
// whose gate the gate-lift pool lifted waits in the queue while the only
// bind goroutine is busy, and is deleted there. Its binding then finds no
// pod: the bind ends as "the pod was deleted", and the reservation is
// released in memory and in the policy's status (nothing else would
// release it: the deletion's Forget leaves a pod that is binding alone).
func TestPodDeletedBetweenTheStages(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Stop() }()
	c := e.Client

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "stages-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	policy := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{GenerateName: "stages-"}}
	if err := c.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "stages-node", Labels: map[string]string{corev1.LabelHostname: "stages-node"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("10"),
		}},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "between"},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}},
			Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			}}},
		},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}

	clk := clock.RealClock{}
	s := &Scheduler{
		Client: c,
		Cache:  cache.New(ctx, clk),
		Ledger: ledger.New(c, c, nil),
		Binder: &bind.Binder{Client: c},
		Clock:  clk,
	}
	s.Cache.UpsertNode(node)
	state := framework.NewCycleState(policy, pod)
	now := clk.Now()
	if err := s.Cache.Reserve(pod, state.PodRequests, node.Name, policy, now); err != nil {
		t.Fatal(err)
	}
	r := ledger.NewReservation(pod, node.Name, state.PodRequests.ResourceList(), now, nil)
	if err := s.Ledger.Record(ctx, policy.Name, r); err != nil {
		t.Fatal(err)
	}
	ended := make(chan *framework.Status, 1)
	s.Async = NewAsyncBinder(ctx, AsyncOptions{Binds: 1, Ungates: 1}, func(_ *corev1.Pod, _ string, st *framework.Status, _ time.Duration) {
		ended <- st
	})

	// The one bind goroutine is busy until release.
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	if err := s.Async.submit(ctx, func() { <-release }); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.dispatchBind(ctx, state, pod, node); st.Code() != framework.Skip {
		t.Fatalf("dispatchBind: %v, want Skip (handed to the binder)", st)
	}

	// Stage one lifts the gate, pins the pod and records its policy.
	key := client.ObjectKeyFromObject(pod)
	poll(t, "the gate lifted and the policy recorded", func() (bool, error) {
		got := &corev1.Pod{}
		if err := c.Get(ctx, key, got); err != nil {
			return false, err
		}
		return !bind.HasGate(got) && got.Spec.NodeSelector[corev1.LabelHostname] == node.Name &&
			got.Annotations[bindgatev1alpha1.PolicyAnnotation] == policy.Name, nil
	})
	// Deleted while it waits for the bind goroutine.
	if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	poll(t, "the pod gone", func() (bool, error) {
		err := c.Get(ctx, key, &corev1.Pod{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if _, held := s.Cache.Reserved(pod.UID); !held {
		t.Fatal("the reservation was released before the bind stage ran")
	}
	close(release)

	select {
	case st := <-ended:
		if st.Code() != framework.Pending || st.Message() != "the pod was deleted" {
			t.Errorf("the bind ended with %v, want Pending: the pod was deleted", st)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the bind did not end in 30s")
	}
	if _, held := s.Cache.Reserved(pod.UID); held {
		t.Error("the deleted pod's reservation is still held in memory")
	}
	if s.Async.Busy(pod.UID) {
		t.Error("the binder still counts the deleted pod in flight")
	}
	if _, binding := s.binding.Load(pod.UID); binding {
		t.Error("the deleted pod still counts as binding")
	}
	poll(t, "the reservation gone from the policy's status", func() (bool, error) {
		got := &bindgatev1alpha1.BindingPolicy{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(policy), got); err != nil {
			return false, err
		}
		return !slices.ContainsFunc(got.Status.Reservations, func(r bindgatev1alpha1.Reservation) bool { return r.PodUID == pod.UID }), nil
	})
}

// poll waits up to 30s for cond.
func poll(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cond()
	}); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
