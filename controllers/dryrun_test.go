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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/dryrun"
	"github.com/bindgate/bindgate/internal/metrics"
)

// TestDryRunPolicy: a DryRun policy with a higher priority than the Enforce
// policy that selects the same pods changes nothing about where they go
// (the same pods land on the same nodes as with the DryRun policy absent),
// and its status, the pods' events and the metric say what it would have
// done. Switched to Enforce, it takes new pods.
func TestDryRunPolicy(t *testing.T) {
	startManager(t, 4)
	ctx := context.Background()
	app := uniq("dry-app")
	live := uniq("dry-live")
	pool(t, live, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.Priority = 10
		p.Spec.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	})
	small := newNode(uniq(live+"-small")).label("pool", live).create(t).Name
	newNode(uniq(live+"-big")).label("pool", live).alloc(corev1.ResourceCPU, "16").create(t)
	trial := uniq("dry-trial")
	trialNode := newNode(uniq(trial+"-node")).label("pool", trial).alloc(corev1.ResourceCPU, "2").create(t).Name

	// The same three pods, created twice: without and with the DryRun policy.
	create := func(ns string) {
		newPod(ns, "pinned").label("app", app).nodeSelector(corev1.LabelHostname, small).req(corev1.ResourceCPU, "1").create(t)
		newPod(ns, "held").label("app", app).label("hold", "yes").req(corev1.ResourceCPU, "1").create(t)
		newPod(ns, "big").label("app", app).req(corev1.ResourceCPU, "3").create(t)
	}
	names := []string{"pinned", "held", "big"}
	placements := func(ns string) map[string]string {
		got := map[string]string{}
		eventually(t, 20*time.Second, "pods in "+ns+" bound", func() (bool, error) {
			for _, n := range names {
				p := getPod(t, ns, n)
				if p.Spec.NodeName == "" {
					return false, nil
				}
				got[n] = p.Spec.NodeName + " by " + p.Annotations[bindgatev1alpha1.PolicyAnnotation]
			}
			return true, nil
		})
		return got
	}
	before := ownNamespace(t)
	create(before)
	want := placements(before)
	for _, n := range names {
		if err := env.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: before, Name: n}},
			client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "the first pods gone", func() (bool, error) { return len(listPods(t, before)) == 0, nil })

	pool(t, trial, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.Mode = bindgatev1alpha1.ModeDryRun
		p.Spec.Priority = 100
		p.Spec.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
		withPermit(`pod.metadata.labels[?'hold'].orValue('') != 'yes'`, time.Minute, bindgatev1alpha1.PermitTimeoutReject)(p)
	})
	eventually(t, 10*time.Second, "the DryRun policy Ready", func() (bool, error) {
		c := meta.FindStatusCondition(getPolicy(t, trial).Status.Conditions, bindgatev1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "DryRun"), nil
	})
	after := ownNamespace(t)
	create(after)
	if diff := cmp.Diff(want, placements(after)); diff != "" {
		t.Errorf("placements with the DryRun policy present (-absent +present):\n%s", diff)
	}

	// What the DryRun policy would have done, in its status...
	type decision struct{ Pod, Outcome, Node, Reason, TakenBy string }
	wantDecisions := map[string]decision{
		"pinned": {"pinned", "Unschedulable", "", "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) didn't match policy nodeSelector.", live},
		"held":   {"held", "Wait", trialNode, "approved: expression is false", live},
		"big":    {"big", "Unschedulable", "", "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match policy nodeSelector.", live},
	}
	var status *bindgatev1alpha1.DryRunStatus
	eventually(t, 10*time.Second, "status.dryRun counts the three pods", func() (bool, error) {
		status = getPolicy(t, trial).Status.DryRun
		return status != nil && status.Wait+status.Unschedulable+status.Bind+status.Refuse == 3, nil
	})
	if status.Wait != 1 || status.Unschedulable != 2 || status.Bind != 0 || status.Refuse != 0 {
		t.Errorf("counts = %+v, want 1 Wait, 2 Unschedulable", status)
	}
	got := map[string]decision{}
	for _, d := range status.Recent {
		if d.PodNamespace == after {
			got[d.PodName] = decision{d.PodName, string(d.Outcome), d.Node, d.Reason, d.TakenBy}
		}
	}
	if diff := cmp.Diff(wantDecisions, got); diff != "" {
		t.Errorf("status.dryRun.recent (-want +got):\n%s", diff)
	}
	// ...in one Normal event per pod...
	var list corev1.EventList
	if err := env.Client.List(ctx, &list, client.InNamespace(after)); err != nil {
		t.Fatal(err)
	}
	dry := map[string][]string{}
	for _, e := range list.Items {
		if e.Reason == dryrun.EventDryRun {
			dry[e.InvolvedObject.Name] = append(dry[e.InvolvedObject.Name], e.Type+": "+e.Message)
		}
	}
	for _, n := range names {
		d := dry[n]
		if len(d) != 1 || !strings.HasPrefix(d[0], "Normal: BindingPolicy "+trial+" (DryRun) would") || !strings.HasSuffix(d[0], "BindingPolicy "+live+" takes it") {
			t.Errorf("pod %s: DryRun events %q, want one Normal event naming both policies", n, d)
		}
	}
	// ...and in the metric.
	if v := testutil.ToFloat64(metrics.DryRunDecisions.WithLabelValues(trial, "Unschedulable")); v != 2 {
		t.Errorf("bindgate_dry_run_decisions_total{policy=%s,outcome=Unschedulable} = %v, want 2", trial, v)
	}
	if n := len(getPolicy(t, trial).Status.Reservations); n != 0 {
		t.Errorf("the DryRun policy holds %d reservations", n)
	}

	// Switched to Enforce, it takes new pods, and its DryRun record goes.
	p := getPolicy(t, trial)
	patch := client.MergeFrom(p.DeepCopy())
	p.Spec.Mode = bindgatev1alpha1.ModeEnforce
	if err := env.Client.Patch(ctx, p, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "status.dryRun cleared", func() (bool, error) {
		return getPolicy(t, trial).Status.DryRun == nil, nil
	})
	newPod(after, "late").label("app", app).req(corev1.ResourceCPU, "500m").create(t)
	eventually(t, 20*time.Second, "the new pod bound by the policy now enforced", func() (bool, error) {
		pod := getPod(t, after, "late")
		return pod.Spec.NodeName == trialNode && pod.Annotations[bindgatev1alpha1.PolicyAnnotation] == trial, nil
	})
}

// TestSwitchToDryRunReleasesReservations: a pod waiting under a policy
// switched to DryRun loses its reservation, with a ReservationReleased
// event, and is not bound.
func TestSwitchToDryRunReleasesReservations(t *testing.T) {
	startManager(t, 2)
	ctx := context.Background()
	pol := uniq("to-dry")
	pool(t, pol, ownPods, withPermit(approvedExpr, time.Minute, bindgatev1alpha1.PermitTimeoutReject))
	node := newNode(uniq(pol+"-node")).label("pool", pol).create(t).Name
	waitReady(t, pol)
	ns := ownNamespace(t)
	newPod(ns, "waiting").policy(pol).label("owner", pol).req(corev1.ResourceCPU, "100m").create(t)
	eventually(t, 10*time.Second, "the pod waits with a reservation", func() (bool, error) {
		return len(getPolicy(t, pol).Status.Reservations) == 1 && permitReason(t, ns, "waiting") == bindgatev1alpha1.ReasonWaiting, nil
	})
	p := getPolicy(t, pol)
	patch := client.MergeFrom(p.DeepCopy())
	p.Spec.Mode = bindgatev1alpha1.ModeDryRun
	if err := env.Client.Patch(ctx, p, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the reservation released, with an event", func() (bool, error) {
		return len(getPolicy(t, pol).Status.Reservations) == 0 &&
			hasEvent(t, ns, "waiting", "ReservationReleased", "Released the reservation on node "+node+": BindingPolicy "+pol+", which held it, was switched to DryRun mode"), nil
	})
	if n := getPod(t, ns, "waiting").Spec.NodeName; n != "" {
		t.Errorf("the pod was bound to %s under a DryRun policy", n)
	}
}
