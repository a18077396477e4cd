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

package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/queue"
)

// TestBindDoneRequeues: a bind that did not bind puts the pod back after
// the delay its cycle asked for, at the pod's priority; a bound pod is not
// requeued.
func TestBindDoneRequeues(t *testing.T) {
	r := &PodReconciler{Queue: queue.New(nil, nil)}
	q := priorityqueue.New[reconcile.Request](fmt.Sprintf("test-%s", t.Name()))
	t.Cleanup(q.ShutDown)
	var wq workqueue.TypedRateLimitingInterface[reconcile.Request] = q
	if err := r.Queue.Source().Start(t.Context(), wq); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, prio int32) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
			Spec: corev1.PodSpec{Priority: &prio}}
	}
	lost := framework.NewStatus(framework.Pending, "lost a race")
	r.bindDone(pod("bound", 0), "p", nil, 0)
	r.bindDone(pod("low", 1), "p", lost, time.Millisecond)
	r.bindDone(pod("high", 100), "p", lost, time.Millisecond)
	r.bindDone(pod("later", 1000), "p", lost, time.Hour)

	if err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return q.Len() >= 2, nil
	}); err != nil {
		t.Fatalf("%d keys ready after 10s, want the two pods due in a millisecond", q.Len())
	}
	var got []string
	for range 2 {
		req, prio, _ := q.GetWithPriority()
		got = append(got, fmt.Sprintf("%s@%d", req.Name, prio))
		q.Done(req)
	}
	if want := []string{"high@100", "low@1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("dequeued %v, want %v", got, want)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d more keys ready; the bound pod and the one due in an hour must not be", n)
	}
}
