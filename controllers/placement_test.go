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
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/placement"
)

func antiAffinity(app, key string, required bool) func(*podBuilder) {
	return func(b *podBuilder) {
		b.p.Labels["app"] = app
		term := corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: key}
		aa := &corev1.PodAntiAffinity{}
		if required {
			aa.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term}
		} else {
			aa.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term}}
		}
		b.p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: aa}
	}
}

func spread(app, key string, when corev1.UnsatisfiableConstraintAction) func(*podBuilder) {
	return func(b *podBuilder) {
		b.p.Labels["app"] = app
		b.p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: when,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}}
	}
}

func hostPort(port int32) func(*podBuilder) {
	return func(b *podBuilder) {
		b.p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP}}
	}
}

// settled waits until every pod of ns is bound or marked unschedulable, and
// returns the node of each pod ("" when unschedulable).
func settled(t *testing.T, ns string, n int) map[string]string {
	t.Helper()
	return settledFor(t, ns, n, 30*time.Second)
}

// counts sorts the per-domain counts of bound pods.
func counts(nodes map[string]string, domainOf func(string) string) []int {
	by := map[string]int{}
	for _, n := range nodes {
		if n != "" {
			by[domainOf(n)]++
		}
	}
	var out []int
	for _, c := range by {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

// TestPlacementParity: each scenario is placed as kube-scheduler v1.37.2
// places it (its expected outcome is in the case), on 6 nodes in 3 zones.
func TestPlacementParity(t *testing.T) {
	startManager(t, 4)
	type scenario struct {
		pods  int
		pod   func(*podBuilder)
		check func(t *testing.T, nodes map[string]string, zoneOf func(string) string)
	}
	bound := func(nodes map[string]string) (b int, distinct int) {
		seen := map[string]bool{}
		for _, n := range nodes {
			if n != "" {
				b++
				seen[n] = true
			}
		}
		return b, len(seen)
	}
	cases := map[string]scenario{
		// kube-scheduler binds 6 (one per node) and leaves 2 Pending.
		"required anti-affinity on hostname": {pods: 8, pod: antiAffinity("db", corev1.LabelHostname, true),
			check: func(t *testing.T, nodes map[string]string, _ func(string) string) {
				if b, d := bound(nodes); b != 6 || d != 6 {
					t.Errorf("bound %d on %d nodes, want 6 on 6", b, d)
				}
			}},
		"preferred anti-affinity spreads when room exists": {pods: 6, pod: antiAffinity("web", corev1.LabelHostname, false),
			check: func(t *testing.T, nodes map[string]string, _ func(string) string) {
				if b, d := bound(nodes); b != 6 || d != 6 {
					t.Errorf("bound %d on %d nodes, want 6 on 6", b, d)
				}
			}},
		// kube-scheduler: 3/3/3.
		"topology spread over zones, DoNotSchedule": {pods: 9, pod: spread("s", corev1.LabelTopologyZone, corev1.DoNotSchedule),
			check: func(t *testing.T, nodes map[string]string, zoneOf func(string) string) {
				if got := counts(nodes, zoneOf); fmt.Sprint(got) != "[3 3 3]" {
					t.Errorf("pods per zone %v, want [3 3 3]", got)
				}
			}},
		"topology spread over hostnames, ScheduleAnyway": {pods: 12, pod: spread("h", corev1.LabelHostname, corev1.ScheduleAnyway),
			check: func(t *testing.T, nodes map[string]string, _ func(string) string) {
				if got := counts(nodes, func(n string) string { return n }); fmt.Sprint(got) != "[2 2 2 2 2 2]" {
					t.Errorf("pods per node %v, want [2 2 2 2 2 2]", got)
				}
			}},
		// kube-scheduler binds 6.
		"host port conflicts": {pods: 8, pod: hostPort(9100),
			check: func(t *testing.T, nodes map[string]string, _ func(string) string) {
				if b, d := bound(nodes); b != 6 || d != 6 {
					t.Errorf("bound %d on %d nodes, want 6 on 6", b, d)
				}
			}},
	}
	for name, sc := range cases {
		t.Run(name, func(t *testing.T) {
			pol := uniq("parity")
			pool(t, pol)
			zone := map[string]string{}
			for i := range 6 {
				n := newNode(uniq(pol+"-n")).label("pool", pol).label(corev1.LabelTopologyZone, fmt.Sprintf("%s-z%d", pol, i%3)).create(t)
				zone[n.Name] = n.Labels[corev1.LabelTopologyZone]
			}
			waitReady(t, pol)
			ns := namespace(t, nil)
			for i := range sc.pods {
				b := newPod(ns, fmt.Sprintf("p%d", i)).policy(pol).req(corev1.ResourceCPU, "100m")
				sc.pod(b)
				b.create(t)
			}
			nodes := settled(t, ns, sc.pods)
			sc.check(t, nodes, func(n string) string { return zone[n] })
		})
	}
}

// TestRequiredPodAffinity: a pod that requires an app=db pod on its node
// goes to the db pod's node.
func TestRequiredPodAffinity(t *testing.T) {
	startManager(t, 4)
	pol := uniq("affin")
	pool(t, pol)
	for range 4 {
		newNode(uniq(pol+"-n")).label("pool", pol).create(t)
	}
	waitReady(t, pol)
	ns := namespace(t, nil)
	newPod(ns, "db").policy(pol).label("app", "db").create(t)
	eventually(t, 10*time.Second, "db bound", func() (bool, error) { return getPod(t, ns, "db").Spec.NodeName != "", nil })
	b := newPod(ns, "client").policy(pol)
	b.p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: corev1.LabelHostname,
	}}}}
	b.create(t)
	eventually(t, 10*time.Second, "client bound", func() (bool, error) { return getPod(t, ns, "client").Spec.NodeName != "", nil })
	if got, want := getPod(t, ns, "client").Spec.NodeName, getPod(t, ns, "db").Spec.NodeName; got != want {
		t.Errorf("client on %s, want the db pod's node %s", got, want)
	}
}

// TestReservedPodBlocksAntiAffine: a pod waiting in Permit holds its node
// as an assumed pod does in kube-scheduler, so an anti-affine pod cannot
// take it; once the first is approved and bound, the second still cannot.
func TestReservedPodBlocksAntiAffine(t *testing.T) {
	startManager(t, 4)
	pol := uniq("resaa")
	pool(t, pol, withPermit(`has(pod.metadata.annotations) && 'go' in pod.metadata.annotations`, time.Minute, bindgatev1alpha1.PermitTimeoutRetry))
	newNode(uniq(pol+"-n")).label("pool", pol).create(t)
	waitReady(t, pol)
	ns := namespace(t, nil)
	first := newPod(ns, "first").policy(pol)
	antiAffinity("solo", corev1.LabelHostname, true)(first)
	first.create(t)
	eventually(t, 10*time.Second, "first waiting in Permit", func() (bool, error) {
		return strings.HasPrefix(permittedMessage(t, ns, "first"), "False/Waiting"), nil
	})
	second := newPod(ns, "second").policy(pol)
	antiAffinity("solo", corev1.LabelHostname, true)(second)
	second.create(t)
	eventually(t, 10*time.Second, "second refused by anti-affinity", func() (bool, error) {
		return strings.Contains(podScheduledMessage(t, ns, "second"), "didn't match pod anti-affinity rules"), nil
	})
	if n := getPod(t, ns, "second").Spec.NodeName; n != "" {
		t.Fatalf("second bound to %s next to a reserved anti-affine pod", n)
	}
}

// TestGangAntiAffinity: members of a gang that are anti-affine among
// themselves are placed in one cycle that sees each other: with 2 nodes a
// gang of 3 reserves none; with a third node all 3 bind on distinct nodes.
func TestGangAntiAffinity(t *testing.T) {
	startManager(t, 4)
	pol := uniq("gangaa")
	pool(t, pol, withGang(3))
	newNode(uniq(pol+"-n")).label("pool", pol).create(t)
	newNode(uniq(pol+"-n")).label("pool", pol).create(t)
	waitReady(t, pol)
	ns := namespace(t, nil)
	for i := range 3 {
		b := newPod(ns, fmt.Sprintf("m%d", i)).policy(pol).label(bindgatev1alpha1.GroupLabel, "g")
		antiAffinity("g", corev1.LabelHostname, true)(b)
		b.create(t)
	}
	eventually(t, 10*time.Second, "gang waits, none reserved", func() (bool, error) {
		return strings.Contains(permittedMessage(t, ns, "m0"), "none reserved"), nil
	})
	if len(getPolicy(t, pol).Status.Reservations) != 0 {
		t.Fatal("a gang that cannot be placed holds reservations")
	}
	newNode(uniq(pol+"-n")).label("pool", pol).create(t)
	nodes := settled(t, ns, 3)
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[n] = true
	}
	if len(seen) != 3 || seen[""] {
		t.Errorf("gang placed on %v, want 3 distinct nodes", nodes)
	}
}

// TestDynamicResourcesRefused: a pod with resourceClaims is never bound
// without its devices: bindgate refuses it with a reason naming DRA.
func TestDynamicResourcesRefused(t *testing.T) {
	startManager(t, 4)
	pol := uniq("dra")
	pool(t, pol)
	newNode(uniq(pol+"-n")).label("pool", pol).create(t)
	waitReady(t, pol)
	ns := namespace(t, nil)
	b := newPod(ns, "gpu").policy(pol)
	b.p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: new("gpu-claim")}}
	b.create(t)
	eventually(t, 10*time.Second, "refused naming DRA", func() (bool, error) {
		return strings.Contains(podScheduledMessage(t, ns, "gpu"), placement.ErrReasonDRA), nil
	})
	if n := getPod(t, ns, "gpu").Spec.NodeName; n != "" {
		t.Errorf("DRA pod bound to %s", n)
	}
}
