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
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/controllers"
)

func withGang(minMember int32) func(*bindgatev1alpha1.BindingPolicy) {
	return func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.Permit = &bindgatev1alpha1.Permit{
			Timeout:    &metav1.Duration{Duration: 60 * time.Second},
			Conditions: []bindgatev1alpha1.PermitCondition{{Name: "gang", Gang: &bindgatev1alpha1.GangCondition{MinMember: minMember}}},
		}
	}
}

// TestPermitGangAllOrNothing: a gang of 4 with room for 3 reserves none and
// says why on every member; once room is freed, all 4 bind.
func TestPermitGangAllOrNothing(t *testing.T) {
	startManager(t, 4)
	pol := uniq("gang")
	pool(t, pol, withGang(4))
	node := newNode(uniq(pol+"-node")).label("pool", pol).create(t) // 4 CPU
	waitReady(t, pol)
	ns := namespace(t, nil)
	// A pod bound outside bindgate takes 1 CPU: room for 3.
	blocker := newPod(ns, "blocker").req(corev1.ResourceCPU, "1").p.DeepCopy()
	blocker.Spec.SchedulingGates = nil
	blocker.Spec.NodeName = node.Name
	if err := env.Client.Create(context.Background(), blocker); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		newPod(ns, fmt.Sprintf("m%d", i)).policy(pol).label(bindgatev1alpha1.GroupLabel, "batch-7").
			req(corev1.ResourceCPU, "1").create(t)
	}
	eventually(t, 45*time.Second, "every member says why", func() (bool, error) {
		for i := range 4 {
			if !strings.Contains(permittedMessage(t, ns, fmt.Sprintf("m%d", i)), "gang: gang batch-7: only 3/4 members fit, none reserved") {
				return false, nil
			}
		}
		return true, nil
	})
	consistently(t, time.Second, "no reservation, only the blocker bound", func() bool {
		return len(getPolicy(t, pol).Status.Reservations) == 0 && countBound(t, ns) == 1
	})
	if n := countBound(t, ns); n != 1 {
		t.Fatalf("%d pods bound, want only the blocker", n)
	}

	if err := env.Client.Delete(context.Background(), blocker, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 45*time.Second, "all 4 members bound", func() (bool, error) {
		return countBound(t, ns) == 4, nil
	})
	assertNoOvercommit(t)
}

// TestPermitGangsCompete: two gangs of 3 compete for room for 4: one binds
// fully, the other waits with no member reserved.
func TestPermitGangsCompete(t *testing.T) {
	startManager(t, 4)
	pol := uniq("gangs")
	pool(t, pol, withGang(3))
	newNode(uniq(pol+"-node")).label("pool", pol).create(t) // 4 CPU
	waitReady(t, pol)
	ns := namespace(t, nil)
	for i := range 3 {
		for _, g := range []string{"x", "y"} {
			newPod(ns, fmt.Sprintf("%s%d", g, i)).policy(pol).label(bindgatev1alpha1.GroupLabel, g).
				req(corev1.ResourceCPU, "1").create(t)
		}
	}
	eventually(t, 45*time.Second, "one gang bound, the other waiting", func() (bool, error) {
		bound := map[string]int{}
		for _, p := range listPods(t, ns) {
			if p.Spec.NodeName != "" {
				bound[p.Labels[bindgatev1alpha1.GroupLabel]]++
			}
		}
		if bound["x"]+bound["y"] != 3 || (bound["x"] != 3 && bound["y"] != 3) {
			return false, nil
		}
		loser := "x"
		if bound["x"] == 3 {
			loser = "y"
		}
		for i := range 3 {
			if !strings.Contains(permittedMessage(t, ns, fmt.Sprintf("%s%d", loser, i)), "none reserved") {
				return false, nil
			}
		}
		return true, nil
	})
	consistently(t, time.Second, "one whole gang bound, nothing held", func() bool {
		return countBound(t, ns) == 3 && len(getPolicy(t, pol).Status.Reservations) == 0
	})
	if n := countBound(t, ns); n != 3 {
		t.Errorf("%d pods bound, want 3 (one whole gang)", n)
	}
	if n := len(getPolicy(t, pol).Status.Reservations); n != 0 {
		t.Errorf("%d reservations held by the waiting gang", n)
	}
	assertNoOvercommit(t)
}

// TestPermitGangTimesOutTogether: a placed gang held by another condition
// (an approval that never comes) times out as a whole: every member's
// reservation is released and every member says why.
func TestPermitGangTimesOutTogether(t *testing.T) {
	startManager(t, 4)
	pol := uniq("gangtimeout")
	pool(t, pol, withPermit(approvedExpr, 3*time.Second, bindgatev1alpha1.PermitTimeoutReject), func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.Permit.Conditions = append(p.Spec.Permit.Conditions,
			bindgatev1alpha1.PermitCondition{Name: "gang", Gang: &bindgatev1alpha1.GangCondition{MinMember: 3}})
	})
	newNode(uniq(pol+"-node")).label("pool", pol).create(t)
	waitReady(t, pol)
	ns := namespace(t, nil)
	for i := range 3 {
		newPod(ns, fmt.Sprintf("m%d", i)).policy(pol).label(bindgatev1alpha1.GroupLabel, "g").
			req(corev1.ResourceCPU, "500m").create(t)
	}
	eventually(t, 30*time.Second, "the whole gang reserved", func() (bool, error) {
		return len(getPolicy(t, pol).Status.Reservations) == 3, nil
	})
	eventually(t, 30*time.Second, "every member released and told why", func() (bool, error) {
		if n := len(getPolicy(t, pol).Status.Reservations); n != 0 {
			return false, nil
		}
		for i := range 3 {
			c := podCondition(getPod(t, ns, fmt.Sprintf("m%d", i)), bindgatev1alpha1.PodConditionPermitted)
			if c == nil || c.Reason != bindgatev1alpha1.ReasonTimeout {
				return false, nil
			}
		}
		return true, nil
	})
	if n := countBound(t, ns); n != 0 {
		t.Fatalf("%d members bound without approval", n)
	}
}

// TestGangRecordedTogether: a gang's members are recorded in the policy's
// status in a few group commits, not one status write each (a gang of 300
// waited half a minute for its records before), and every member says the
// latest count while the gang is short (told in batches, not on every
// arrival).
func TestGangRecordedTogether(t *testing.T) {
	startManager(t, 4)
	const n = 40
	pol := uniq("gangrec")
	pool(t, pol, withGang(n))
	newNode(uniq(pol+"-node")).label("pool", pol).alloc(corev1.ResourceCPU, "100").create(t)
	waitReady(t, pol)
	ns := namespace(t, nil)
	member := func(i int) {
		newPod(ns, fmt.Sprintf("m%d", i)).policy(pol).label(bindgatev1alpha1.GroupLabel, "g").req(corev1.ResourceCPU, "100m").create(t)
	}
	for i := range n - 1 {
		member(i)
	}
	want := fmt.Sprintf("gang g: %d/%d members exist, none reserved", n-1, n)
	eventually(t, 30*time.Second, "every member says the latest count", func() (bool, error) {
		for i := range n - 1 {
			if !strings.Contains(permittedMessage(t, ns, fmt.Sprintf("m%d", i)), want) {
				return false, nil
			}
		}
		return true, nil
	})

	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := wc.Watch(ctx, &bindgatev1alpha1.BindingPolicyList{}, client.MatchingFields{"metadata.name": pol},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: getPolicy(t, pol).ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	member(n - 1)
	// Count the status writes that added reservations until all n were
	// recorded.
	grew, held := 0, 0
	timeout := time.After(30 * time.Second)
	for held < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch of the policy ended")
			}
			p, isPolicy := ev.Object.(*bindgatev1alpha1.BindingPolicy)
			if !isPolicy {
				continue
			}
			if r := len(p.Status.Reservations); r > held {
				grew++
				held = r
			} else if r < held && countBound(t, ns) > 0 {
				t.Fatalf("members bound before all %d were recorded (%d held)", n, held)
			}
		case <-timeout:
			t.Fatalf("%d/%d reservations recorded after 30s, in %d writes", held, n, grew)
		}
	}
	if grew > 5 {
		t.Errorf("the gang's %d reservations took %d status writes, want a few group commits", n, grew)
	}
	eventually(t, 30*time.Second, "the gang bound", func() (bool, error) { return countBound(t, ns) == n, nil })
}

// TestGangStatusFull: a gang whose records the policy's status has no room
// for reserves none, its members say why (naming the limit) and the policy
// says ReservationsFull; once the gang before it binds, it is reserved and
// binds in turn. The status holds 4 records here (Options.MaxReservations)
// instead of 1000.
func TestGangStatusFull(t *testing.T) {
	startManager(t, 4, func(o *controllers.Options) { o.MaxReservations = 4 })
	pol := uniq("gangfull")
	pool(t, pol, withTopologyGang(3, nil, bindgatev1alpha1.PermitCondition{Name: "approved", Expression: approvedExpr}))
	newNode(uniq(pol+"-node")).label("pool", pol).create(t) // 4 CPU
	waitReady(t, pol)
	ns := namespace(t, nil)
	members := func(g string) {
		for i := range 3 {
			newPod(ns, fmt.Sprintf("%s%d", g, i)).policy(pol).label(bindgatev1alpha1.GroupLabel, g).req(corev1.ResourceCPU, "100m").create(t)
		}
	}
	approve := func(g string) {
		for i := range 3 {
			patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"true"}}}`, approvedAnnotation))
			if err := env.Client.Patch(context.Background(), getPod(t, ns, fmt.Sprintf("%s%d", g, i)), patch); err != nil {
				t.Fatal(err)
			}
		}
	}
	members("a")
	eventually(t, 30*time.Second, "gang a reserved (3 of 4 records), waiting for approval", func() (bool, error) {
		return len(getPolicy(t, pol).Status.Reservations) == 3, nil
	})

	members("b")
	want := "gang b: no room to record 3 more reservations: the BindingPolicy's status records the most reservations it may hold (4, status.reservations maxItems); none reserved"
	eventually(t, 30*time.Second, "gang b's members say the status is full", func() (bool, error) {
		for i := range 3 {
			if !strings.Contains(permittedMessage(t, ns, fmt.Sprintf("b%d", i)), want) {
				return false, nil
			}
		}
		return true, nil
	})
	p := getPolicy(t, pol)
	if c := meta.FindStatusCondition(p.Status.Conditions, bindgatev1alpha1.ConditionReservationsFull); c == nil || c.Status != metav1.ConditionTrue ||
		!strings.Contains(c.Message, "holds 3 of at most 4 reservations (etcd's object size limit), too few left for a gang of 3 recorded together") {
		t.Errorf("ReservationsFull = %+v, want True, naming the gang", c)
	}
	for _, r := range p.Status.Reservations {
		if !strings.HasPrefix(r.PodName, "a") {
			t.Errorf("%s holds a record: gang b reserved in part", r.PodName)
		}
	}

	approve("a")
	waitGangBound(t, ns, "a", 3)
	eventually(t, 30*time.Second, "gang b reserved, the status has room again", func() (bool, error) {
		p := getPolicy(t, pol)
		c := meta.FindStatusCondition(p.Status.Conditions, bindgatev1alpha1.ConditionReservationsFull)
		return len(p.Status.Reservations) == 3 && c != nil && c.Status == metav1.ConditionFalse, nil
	})
	approve("b")
	waitGangBound(t, ns, "b", 3)
	assertNoOvercommit(t)
}
