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

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// TestReservationReleasedWhenNodeGoes: a waiting pod whose node is deleted
// is placed again, and told so.
func TestReservationReleasedWhenNodeGoes(t *testing.T) {
	startManager(t, 4)
	pol := uniq("nodegone")
	pool(t, pol, withPermit(approvedExpr, time.Minute, bindgatev1alpha1.PermitTimeoutReject))
	first := newNode(uniq(pol+"-a")).label("pool", pol).create(t)
	waitReady(t, pol)
	ns := namespace(t, nil)
	newPod(ns, "a").policy(pol).create(t)
	eventually(t, 10*time.Second, "waiting on the first node", func() (bool, error) {
		r := getPolicy(t, pol).Status.Reservations
		return len(r) == 1 && r[0].Node == first.Name && permitReason(t, ns, "a") == bindgatev1alpha1.ReasonWaiting, nil
	})
	second := newNode(uniq(pol+"-b")).label("pool", pol).create(t)
	if err := env.Client.Delete(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "ReservationReleased naming the node, then waiting on the second", func() (bool, error) {
		r := getPolicy(t, pol).Status.Reservations
		return hasEvent(t, ns, "a", "ReservationReleased", "node "+first.Name+": the node was deleted") &&
			len(r) == 1 && r[0].Node == second.Name, nil
	})
}

// TestReservationReleasedWhenPolicyGoes: a pod waiting under a policy that
// is deleted goes back through matching, with an event naming the policy;
// the policy it matches next (without permit conditions) binds it, and its
// Permitted condition does not stay False on the bound pod.
func TestReservationReleasedWhenPolicyGoes(t *testing.T) {
	startManager(t, 4)
	app := uniq("app")
	selects := func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	strict, lenient := uniq("strict"), uniq("lenient")
	sp := pool(t, strict, selects, withPermit(approvedExpr, time.Minute, bindgatev1alpha1.PermitTimeoutReject),
		func(p *bindgatev1alpha1.BindingPolicy) { p.Spec.Priority = 10 })
	pool(t, lenient, selects)
	newNode(uniq(strict+"-node")).label("pool", strict).create(t)
	newNode(uniq(lenient+"-node")).label("pool", lenient).create(t)
	waitReady(t, strict)
	waitReady(t, lenient)
	ns := namespace(t, nil)
	newPod(ns, "a").label("app", app).create(t)
	eventually(t, 10*time.Second, "waiting under the strict policy", func() (bool, error) {
		return len(getPolicy(t, strict).Status.Reservations) == 1 && permitReason(t, ns, "a") == bindgatev1alpha1.ReasonWaiting, nil
	})
	if err := env.Client.Delete(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "bound by the lenient policy", func() (bool, error) {
		return getPod(t, ns, "a").Spec.NodeName != "", nil
	})
	eventually(t, 10*time.Second, "a ReservationReleased event naming the deleted policy", func() (bool, error) {
		return hasEvent(t, ns, "a", "ReservationReleased", "BindingPolicy "+strict+", which held it, was deleted; matching the pod again: now BindingPolicy "+lenient), nil
	})
	p := getPod(t, ns, "a")
	if p.Annotations[bindgatev1alpha1.PolicyAnnotation] != lenient {
		t.Errorf("bound under policy %q, want %q", p.Annotations[bindgatev1alpha1.PolicyAnnotation], lenient)
	}
	if c := podCondition(p, bindgatev1alpha1.PodConditionPermitted); c == nil || c.Status != corev1.ConditionTrue || c.Reason != bindgatev1alpha1.ReasonPermitted {
		t.Errorf("Permitted on the bound pod = %+v, want True/Permitted", c)
	}
}

// TestReservationReleasedWhenPolicyTurnsInvalid: a pod waiting under a
// policy that stops being Ready (an expression edited into one that does
// not compile) does not keep its capacity: the reservation is released and
// the pod told why.
func TestReservationReleasedWhenPolicyTurnsInvalid(t *testing.T) {
	startManager(t, 4)
	pol := uniq("turnsinvalid")
	pool(t, pol, withPermit(approvedExpr, time.Minute, bindgatev1alpha1.PermitTimeoutReject))
	newNode(uniq(pol+"-node")).label("pool", pol).create(t)
	waitReady(t, pol)
	ns := namespace(t, nil)
	newPod(ns, "a").policy(pol).create(t)
	eventually(t, 10*time.Second, "waiting with a reservation", func() (bool, error) {
		return len(getPolicy(t, pol).Status.Reservations) == 1 && permitReason(t, ns, "a") == bindgatev1alpha1.ReasonWaiting, nil
	})
	p := getPolicy(t, pol)
	p.Spec.Permit.Conditions[0].Expression = `pod.spec.priority == 'high'`
	if err := env.Client.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "released, with an event saying why", func() (bool, error) {
		return len(getPolicy(t, pol).Status.Reservations) == 0 &&
			hasEvent(t, ns, "a", "ReservationReleased", "BindingPolicy "+pol+", which held it, is not Ready (InvalidExpression"), nil
	})
	if n := getPod(t, ns, "a").Spec.NodeName; n != "" {
		t.Errorf("pod bound to %s under an invalid policy", n)
	}
}
