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

package controllers_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/controllers"
)

// poke writes a condition of no meaning to bindgate on the pod's status:
// an update that requeues the pod at once but cannot change its answer.
func poke(t *testing.T, ns, name string) {
	t.Helper()
	// The operator writes the pod's status too: retry on conflicts.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := getPod(t, ns, name)
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodConditionType("test.bindgate.dev/Poke-" + uniq("x")), Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.Now(),
		})
		return env.Client.Status().Update(context.Background(), p)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func permitReason(t *testing.T, ns, name string) string {
	if c := podCondition(getPod(t, ns, name), bindgatev1alpha1.PodConditionPermitted); c != nil {
		return c.Reason
	}
	return ""
}

func reservedPods(t *testing.T, pol string) map[string]bool {
	got := map[string]bool{}
	for _, r := range getPolicy(t, pol).Status.Reservations {
		got[r.PodName] = true
	}
	return got
}

// TestPermitTimeoutRejectVsRetry runs the operator on a fake clock: after a
// permit timeout, Retry reserves again after 1s, while Reject keeps the pod
// unschedulable — through updates that cannot change the answer — until
// the pod changes or 5 minutes pass.
func TestPermitTimeoutRejectVsRetry(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	startManager(t, 4, func(o *controllers.Options) { o.Clock = clk })
	ns := namespace(t, nil)
	const timeout = 10 * time.Second
	reject, retry := uniq("reject"), uniq("retry")
	pool(t, reject, withPermit(approvedExpr, timeout, bindgatev1alpha1.PermitTimeoutReject))
	pool(t, retry, withPermit(approvedExpr, timeout, bindgatev1alpha1.PermitTimeoutRetry))
	newNode(uniq(reject+"-node")).label("pool", reject).create(t)
	newNode(uniq(retry+"-node")).label("pool", retry).create(t)
	waitReady(t, reject)
	waitReady(t, retry)
	newPod(ns, "rejected").policy(reject).create(t)
	newPod(ns, "changed").policy(reject).create(t)
	newPod(ns, "retried").policy(retry).create(t)
	eventually(t, 10*time.Second, "all three waiting in Permit", func() (bool, error) {
		return permitReason(t, ns, "rejected") == bindgatev1alpha1.ReasonWaiting &&
			permitReason(t, ns, "changed") == bindgatev1alpha1.ReasonWaiting &&
			permitReason(t, ns, "retried") == bindgatev1alpha1.ReasonWaiting, nil
	})

	clk.Step(timeout + time.Second)
	for _, p := range []string{"rejected", "changed", "retried"} {
		poke(t, ns, p)
	}
	eventually(t, 10*time.Second, "all three timed out and released", func() (bool, error) {
		return permitReason(t, ns, "rejected") == bindgatev1alpha1.ReasonTimeout &&
			permitReason(t, ns, "changed") == bindgatev1alpha1.ReasonTimeout &&
			permitReason(t, ns, "retried") == bindgatev1alpha1.ReasonTimeout &&
			len(reservedPods(t, reject)) == 0 && len(reservedPods(t, retry)) == 0, nil
	})
	for _, p := range []string{"rejected", "changed"} {
		if c := podCondition(getPod(t, ns, p), corev1.PodScheduled); c == nil || c.Status != corev1.ConditionFalse ||
			c.Reason != corev1.PodReasonUnschedulable {
			t.Errorf("%s: PodScheduled = %+v, want False/Unschedulable", p, c)
		}
	}

	// Retry: the 1s backoff ends and the pod reserves and waits again.
	clk.Step(2 * time.Second)
	poke(t, ns, "retried")
	eventually(t, 10*time.Second, "Retry waits again", func() (bool, error) {
		return permitReason(t, ns, "retried") == bindgatev1alpha1.ReasonWaiting && reservedPods(t, retry)["retried"], nil
	})

	// Reject: 4 minutes and unrelated updates later, still no reservation.
	clk.Step(4 * time.Minute)
	poke(t, ns, "rejected")
	consistently(t, 2*time.Second, "Reject holds the pod unreserved", func() bool {
		return len(reservedPods(t, reject)) == 0 && permitReason(t, ns, "rejected") == bindgatev1alpha1.ReasonTimeout
	})

	// A change to the pod lifts the hold at once: approved, it binds.
	p := getPod(t, ns, "changed")
	p.Annotations = map[string]string{approvedAnnotation: "true"}
	if err := env.Client.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the changed pod bound", func() (bool, error) {
		return getPod(t, ns, "changed").Spec.NodeName != "", nil
	})
	if r := reservedPods(t, reject); r["rejected"] {
		t.Errorf("the unchanged pod reserved again when another changed")
	}

	// 5 minutes after the rejection, the unchanged pod is tried again.
	clk.Step(time.Minute)
	poke(t, ns, "rejected")
	eventually(t, 10*time.Second, "Reject tried again after 5m", func() (bool, error) {
		return permitReason(t, ns, "rejected") == bindgatev1alpha1.ReasonWaiting && reservedPods(t, reject)["rejected"], nil
	})
}
