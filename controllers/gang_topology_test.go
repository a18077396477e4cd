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

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/explain"
)

const (
	zoneLabel = "topology.kubernetes.io/zone"
	rackLabel = "example.com/rack"
)

func withTopologyGang(minMember int32, topo *bindgatev1alpha1.GangTopology, more ...bindgatev1alpha1.PermitCondition) func(*bindgatev1alpha1.BindingPolicy) {
	return func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.Permit = &bindgatev1alpha1.Permit{
			Timeout: &metav1.Duration{Duration: 60 * time.Second},
			Conditions: append([]bindgatev1alpha1.PermitCondition{{Name: "gang",
				Gang: &bindgatev1alpha1.GangCondition{MinMember: minMember, Topology: topo}}}, more...),
		}
	}
}

// racks creates, in the policy's pool, the racks named (4 nodes of 4 CPU
// each) in the zone given for each rack.
func racks(t *testing.T, pol string, zoneOf map[string]string) {
	t.Helper()
	for rack, zone := range zoneOf {
		for i := range 4 {
			newNode(fmt.Sprintf("%s-%s-%d", pol, rack, i)).label("pool", pol).
				label(rackLabel, rack).label(zoneLabel, zone).create(t)
		}
	}
}

// gangPods creates n members of group g, 2 CPU each (two per node, eight
// per rack); minMember overrides the policy's when > 0.
func gangPods(t *testing.T, ns, pol, g string, n, minMember int) {
	t.Helper()
	for i := range n {
		b := newPod(ns, fmt.Sprintf("%s-%d", g, i)).policy(pol).label(bindgatev1alpha1.GroupLabel, g).req(corev1.ResourceCPU, "2")
		if minMember > 0 {
			b.p.Annotations = map[string]string{bindgatev1alpha1.MinMemberAnnotation: fmt.Sprint(minMember)}
		}
		b.create(t)
	}
}

// gangNodes returns the nodes the group's bound members are on.
func gangNodes(t *testing.T, ns, g string) []*corev1.Node {
	t.Helper()
	var out []*corev1.Node
	for _, p := range listPods(t, ns) {
		if p.Labels[bindgatev1alpha1.GroupLabel] != g || p.Spec.NodeName == "" {
			continue
		}
		n := &corev1.Node{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: p.Spec.NodeName}, n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func labelValues(nodes []*corev1.Node, key string) sets.Set[string] {
	s := sets.New[string]()
	for _, n := range nodes {
		s.Insert(n.Labels[key])
	}
	return s
}

func waitGangBound(t *testing.T, ns, g string, n int) []*corev1.Node {
	t.Helper()
	var nodes []*corev1.Node
	eventually(t, 60*time.Second, fmt.Sprintf("gang %s: %d members bound", g, n), func() (bool, error) {
		nodes = gangNodes(t, ns, g)
		return len(nodes) == n, nil
	})
	return nodes
}

// TestGangTopologyLevels: 4 racks of 4 nodes in 2 zones, gangs with
// Required [zone, rack] levels: a gang of 8 lands in one rack; one of 12
// (no rack holds it) in one zone; one of 10 that no rack or zone can hold
// waits with no member reserved and the reason on every member, then lands
// in one zone once room is freed.
func TestGangTopologyLevels(t *testing.T) {
	startManager(t, 8)
	pol := uniq("tas")
	pool(t, pol, withTopologyGang(8, &bindgatev1alpha1.GangTopology{Levels: []string{zoneLabel, rackLabel}}))
	racks(t, pol, map[string]string{"a": "z1", "b": "z1", "c": "z2", "d": "z2"})
	waitReady(t, pol)
	ns := namespace(t, nil)

	gangPods(t, ns, pol, "t1", 8, 0)
	t1 := waitGangBound(t, ns, "t1", 8)
	if r := labelValues(t1, rackLabel); r.Len() != 1 {
		t.Fatalf("gang of 8 spread over racks %v, want one rack", sets.List(r))
	}
	msg := permittedMessage(t, ns, "t1-0")
	if want := fmt.Sprintf("gang t1 placed in %s=%s,%s=%s", zoneLabel, t1[0].Labels[zoneLabel], rackLabel, t1[0].Labels[rackLabel]); !strings.Contains(msg, want) {
		t.Errorf("Permitted message %q does not say %q", msg, want)
	}

	// kubectl get bp -o wide shows the gangs and where they are.
	domain := fmt.Sprintf("%s=%s,%s=%s", zoneLabel, t1[0].Labels[zoneLabel], rackLabel, t1[0].Labels[rackLabel])
	eventually(t, 15*time.Second, "the policy's gang columns", func() (bool, error) {
		cols := policyTable(t, pol)
		return cols["1 Gangs"] == "1" && cols["1 Gang domains"] == "1 in "+domain, nil
	})

	gangPods(t, ns, pol, "t2", 12, 12)
	t2 := waitGangBound(t, ns, "t2", 12)
	if z := labelValues(t2, zoneLabel); z.Len() != 1 || z.Has(t1[0].Labels[zoneLabel]) {
		t.Fatalf("gang of 12 in zones %v, want the one zone with two free racks", sets.List(z))
	}

	// 8 CPU-pairs are left, in t1's zone: no rack or zone holds 10.
	gangPods(t, ns, pol, "t3", 10, 10)
	want := fmt.Sprintf("gang: gang t3: no %s or %s domain holds 10 members (best: ", rackLabel, zoneLabel)
	eventually(t, 30*time.Second, "every member of t3 says why it waits", func() (bool, error) {
		for i := range 10 {
			m := permittedMessage(t, ns, fmt.Sprintf("t3-%d", i))
			if !strings.Contains(m, want) || !strings.Contains(m, "holds 8), none reserved") {
				return false, nil
			}
		}
		return true, nil
	})
	for _, r := range getPolicy(t, pol).Status.Reservations {
		if strings.HasPrefix(r.PodName, "t3-") {
			t.Fatalf("waiting gang t3 holds a reservation on %s", r.Node)
		}
	}
	// t1 ends: its zone now holds t3.
	for i := range 8 {
		if err := env.Client.Delete(context.Background(), getPod(t, ns, fmt.Sprintf("t1-%d", i)), client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	t3 := waitGangBound(t, ns, "t3", 10)
	if z := labelValues(t3, zoneLabel); z.Len() != 1 || !z.Has(t1[0].Labels[zoneLabel]) {
		t.Fatalf("gang of 10 in zones %v, want %s", sets.List(z), t1[0].Labels[zoneLabel])
	}
	assertNoOvercommit(t)
}

// TestGangTopologyCompete: two gangs that each need most of the one rack
// never both hold part of it: one binds, the other waits holding nothing,
// and binds once the first is gone.
func TestGangTopologyCompete(t *testing.T) {
	startManager(t, 8)
	pol := uniq("tasrace")
	pool(t, pol, withTopologyGang(6, &bindgatev1alpha1.GangTopology{Key: rackLabel}))
	racks(t, pol, map[string]string{"r": "z"})
	waitReady(t, pol)
	ns := namespace(t, nil)
	for i := range 6 {
		for _, g := range []string{"x", "y"} {
			newPod(ns, fmt.Sprintf("%s-%d", g, i)).policy(pol).label(bindgatev1alpha1.GroupLabel, g).req(corev1.ResourceCPU, "2").create(t)
		}
	}
	var winner, loser string
	eventually(t, 60*time.Second, "one gang bound, the other waiting with nothing held", func() (bool, error) {
		x, y := len(gangNodes(t, ns, "x")), len(gangNodes(t, ns, "y"))
		switch {
		case x == 6 && y == 0:
			winner, loser = "x", "y"
		case y == 6 && x == 0:
			winner, loser = "y", "x"
		default:
			return false, nil
		}
		for i := range 6 {
			if !strings.Contains(permittedMessage(t, ns, fmt.Sprintf("%s-%d", loser, i)), "none reserved") {
				return false, nil
			}
		}
		return len(getPolicy(t, pol).Status.Reservations) == 0, nil
	})
	for i := range 6 {
		if err := env.Client.Delete(context.Background(), getPod(t, ns, fmt.Sprintf("%s-%d", winner, i)), client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	waitGangBound(t, ns, loser, 6)
	assertNoOvercommit(t)
}

// TestGangMemberDeletedReleasesAll: a gang reserved together and waiting
// for an approval loses a member: the others let go of their reservations
// and say the gang is short.
func TestGangMemberDeletedReleasesAll(t *testing.T) {
	startManager(t, 4)
	pol := uniq("gangdel")
	pool(t, pol, withTopologyGang(3, &bindgatev1alpha1.GangTopology{Key: rackLabel},
		bindgatev1alpha1.PermitCondition{Name: "approved", Expression: approvedExpr}))
	racks(t, pol, map[string]string{"r": "z"})
	waitReady(t, pol)
	ns := namespace(t, nil)
	for i := range 3 {
		newPod(ns, fmt.Sprintf("m%d", i)).policy(pol).label(bindgatev1alpha1.GroupLabel, "g").req(corev1.ResourceCPU, "1").create(t)
	}
	eventually(t, 30*time.Second, "the whole gang reserved", func() (bool, error) {
		return len(getPolicy(t, pol).Status.Reservations) == 3, nil
	})
	if err := env.Client.Delete(context.Background(), getPod(t, ns, "m0"), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitReservationsEmpty(t, pol)
	eventually(t, 30*time.Second, "the rest say the gang is short", func() (bool, error) {
		for _, m := range []string{"m1", "m2"} {
			if msg := permittedMessage(t, ns, m); !strings.Contains(msg, "gang g: 2/3 members exist, none reserved") {
				t.Logf("%s: %s", m, msg)
				return false, nil
			}
		}
		return true, nil
	})
	if n := countBound(t, ns); n != 0 {
		t.Fatalf("%d members bound", n)
	}
}

// TestPodGroupGang: pods that name an upstream PodGroup (Workload API,
// scheduling.k8s.io/v1beta1) with a gang policy are one gang with its
// minCount and topology key, under a policy that has no gang condition and
// without bindgate's group label.
func TestPodGroupGang(t *testing.T) {
	startManager(t, 4)
	pol := uniq("podgroup")
	pool(t, pol)
	racks(t, pol, map[string]string{"a": "z1", "b": "z1"})
	waitReady(t, pol)
	ns := namespace(t, nil)
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "train"},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy:      schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 3}},
			SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: rackLabel}}},
		},
	}
	if err := env.Client.Create(context.Background(), pg); err != nil {
		t.Fatal(err)
	}
	if sc := pg.Spec.SchedulingConstraints; sc == nil || len(sc.Topology) != 1 {
		t.Fatalf("the API server dropped the PodGroup's schedulingConstraints (%+v): is TopologyAwareWorkloadScheduling on?", sc)
	}
	member := func(name string) {
		b := newPod(ns, name).policy(pol).req(corev1.ResourceCPU, "2")
		b.p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &pg.Name}
		b.create(t)
	}
	// A pod that names a PodGroup not created yet waits, naming it.
	ghost := newPod(ns, "ghost").policy(pol).req(corev1.ResourceCPU, "2")
	ghostName := "not-yet"
	ghost.p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &ghostName}
	ghost.create(t)
	member("w0")
	member("w1")
	eventually(t, 30*time.Second, "the pod of a missing PodGroup waits naming it", func() (bool, error) {
		return strings.Contains(permittedMessage(t, ns, "ghost"), "gang not-yet: PodGroup not-yet not found"), nil
	})
	eventually(t, 30*time.Second, "two members wait for the third", func() (bool, error) {
		for _, m := range []string{"w0", "w1"} {
			if !strings.Contains(permittedMessage(t, ns, m), "gang train: 2/3 members exist, none reserved") {
				return false, nil
			}
		}
		return true, nil
	})
	if n := countBound(t, ns); n != 0 {
		t.Fatalf("%d pods bound before the gang is complete", n)
	}
	// explain shows the PodGroup's wait, though the policy has no gang
	// condition of its own.
	r, text := explainPod(t, ns, "w0", explain.ExplainOptions{})
	want := []explain.ConditionVerdict{{Name: "gang", Kind: "podgroup", Verdict: explain.VerdictWaiting, Message: "gang train: 2/3 members exist, none reserved"}}
	if diff := cmp.Diff(want, r.Permit); diff != "" {
		t.Errorf("explain's permit verdicts (-want +got):\n%s", diff)
	}
	wantText(t, text, "waiting in Permit for gang, no reservation yet")
	member("w2")
	var nodes []*corev1.Node
	eventually(t, 30*time.Second, "the gang bound together", func() (bool, error) {
		nodes = nodes[:0]
		for _, p := range listPods(t, ns) {
			if p.Spec.NodeName != "" && p.Name != "ghost" {
				n := &corev1.Node{}
				if err := env.Client.Get(context.Background(), client.ObjectKey{Name: p.Spec.NodeName}, n); err != nil {
					return false, err
				}
				nodes = append(nodes, n)
			}
		}
		return len(nodes) == 3, nil
	})
	if r := labelValues(nodes, rackLabel); r.Len() != 1 {
		t.Errorf("PodGroup with topology key %s spread over racks %v", rackLabel, sets.List(r))
	}
	if n := getPod(t, ns, "ghost").Spec.NodeName; n != "" {
		t.Errorf("the pod of a missing PodGroup was bound to %s", n)
	}
}

// TestGangSchedulerName: members that name schedulerName: bindgate (no
// gate) are placed together as gated ones are.
func TestGangSchedulerName(t *testing.T) {
	startManager(t, 4)
	pol := uniq("gangsn")
	pool(t, pol, withTopologyGang(3, &bindgatev1alpha1.GangTopology{Key: rackLabel}))
	racks(t, pol, map[string]string{"a": "z1", "b": "z1"})
	waitReady(t, pol)
	ns := namespace(t, nil)
	for i := range 3 {
		newPod(ns, fmt.Sprintf("s%d", i)).policy(pol).label(bindgatev1alpha1.GroupLabel, "sn").req(corev1.ResourceCPU, "2").schedulerName().create(t)
	}
	nodes := waitGangBound(t, ns, "sn", 3)
	if r := labelValues(nodes, rackLabel); r.Len() != 1 {
		t.Errorf("gang spread over racks %v", sets.List(r))
	}
}
