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
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv/faults"
)

// TestRecordAnsweredTimeoutThenPodDeleted: a reservation's record that the
// API server applied but answered 504 (after the policy's watch showed it,
// as a real timeout does), for a pod deleted before it is recorded again,
// does not stay in the policy's status, nor hold its node's capacity: a
// pod that needs the whole node binds after it. It used to stay in the
// status until the operator restarted.
func TestRecordAnsweredTimeoutThenPodDeleted(t *testing.T) {
	ctx := context.Background()
	px, err := faults.Start(env.Config, faults.Config{Seed: 16, TimeoutAfterApplyDelay: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	startManagerWithConfig(t, px.Config(), 4)
	pol := uniq("record504")
	pool(t, pol, withPermit(approvedExpr, time.Minute, bindgatev1alpha1.PermitTimeoutReject))
	node := newNode(uniq(pol+"-node")).label("pool", pol).create(t) // 4 CPU
	waitReady(t, pol)
	ns := namespace(t, nil)
	// The policy's first status write is applied, then answered 504; the
	// later ones fail (500, not applied) until the pod is deleted, so the
	// pod is not recorded again meanwhile.
	var writes atomic.Int64
	var on atomic.Bool
	on.Store(true)
	statusWrite := func(r faults.Request) bool {
		return on.Load() && r.Resource == "bindingpolicies" && r.Subresource == "status" && r.Name == pol
	}
	if err := px.SetRules([]faults.Rule{
		{Kind: faults.TimeoutAfterApply, Rate: 1, Match: func(r faults.Request) bool { return statusWrite(r) && writes.Add(1) == 1 }},
		{Kind: faults.ServerError, Rate: 1, Match: func(r faults.Request) bool { return statusWrite(r) && r.Write() && writes.Load() > 1 }},
	}); err != nil {
		t.Fatal(err)
	}
	a := newPod(ns, "a").policy(pol).req(corev1.ResourceCPU, "4").create(t)
	eventually(t, 20*time.Second, "the record of a applied, answered 504, and not written again", func() (bool, error) {
		for _, r := range getPolicy(t, pol).Status.Reservations {
			if r.PodUID == a.UID {
				return px.Counts()[faults.TimeoutAfterApply] == 1 && px.Counts()[faults.ServerError] > 0, nil
			}
		}
		return false, nil
	})
	if err := env.Client.Delete(ctx, a, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	on.Store(false)
	waitReservationsEmpty(t, pol)

	b := newPod(ns, "b").policy(pol).req(corev1.ResourceCPU, "4").p
	b.Annotations = map[string]string{approvedAnnotation: "true"}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "b bound on the node a's record held", func() (bool, error) {
		return getPod(t, ns, "b").Spec.NodeName == node.Name, nil
	})
	waitReservationsEmpty(t, pol)
}
