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
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
)

func TestHappyPath(t *testing.T) {
	startManager(t, 16)
	policies := []string{uniq("alpha"), uniq("beta"), uniq("gamma")}
	allowed := map[string]map[string]bool{}
	for _, p := range policies {
		pool(t, p)
		allowed[p] = map[string]bool{}
		for i := range 2 {
			n := newNode(uniq(p+"-node")).label("pool", p).create(t)
			allowed[p][n.Name] = true
			_ = i
		}
	}
	// A node no policy selects: nothing may land there.
	newNode(uniq("other")).label("pool", "none").create(t)

	ns := namespace(t, nil)
	podPolicy := map[string]string{}
	for i := range 50 {
		p := policies[i%3]
		name := fmt.Sprintf("pod-%02d", i)
		podPolicy[name] = p
		newPod(ns, name).policy(p).req(corev1.ResourceCPU, "100m").create(t)
	}
	eventually(t, 60*time.Second, "50 pods bound", func() (bool, error) { return countBound(t, ns) == 50, nil })

	for _, pod := range listPods(t, ns) {
		p := podPolicy[pod.Name]
		if !allowed[p][pod.Spec.NodeName] {
			t.Errorf("pod %s of policy %s bound to %s, outside the policy's nodes", pod.Name, p, pod.Spec.NodeName)
		}
		if len(pod.Spec.SchedulingGates) != 0 {
			t.Errorf("pod %s still has gates %v", pod.Name, pod.Spec.SchedulingGates)
		}
		if got := pod.Spec.NodeSelector[corev1.LabelHostname]; got != pod.Spec.NodeName {
			t.Errorf("pod %s pin = %q, want %q", pod.Name, got, pod.Spec.NodeName)
		}
		if got := pod.Annotations[bindgatev1alpha1.PolicyAnnotation]; got != p {
			t.Errorf("pod %s policy annotation = %q, want %q", pod.Name, got, p)
		}
	}
	eventually(t, 10*time.Second, "Scheduled events", func() (bool, error) {
		for _, pod := range listPods(t, ns) {
			if !hasEvent(t, ns, pod.Name, "Scheduled", fmt.Sprintf("Successfully assigned %s/%s to %s", ns, pod.Name, pod.Spec.NodeName)) {
				return false, nil
			}
		}
		return true, nil
	})
	// Written as kube-scheduler writes it: action Binding, bindgate as the
	// reporting controller, no related object.
	var evs eventsv1.EventList
	if err := env.Client.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range evs.Items {
		if e.Reason != "Scheduled" {
			continue
		}
		seen++
		if e.Action != "Binding" || e.ReportingController != bindgatev1alpha1.SchedulerName || e.Related != nil {
			t.Errorf("Scheduled event of %s: action %q, reportingController %q, related %v; want Binding, %s, none (as kube-scheduler's)",
				e.Regarding.Name, e.Action, e.ReportingController, e.Related, bindgatev1alpha1.SchedulerName)
		}
	}
	if seen == 0 {
		t.Error("no Scheduled event in the events.k8s.io/v1 list")
	}
	for _, p := range policies {
		waitReservationsEmpty(t, p)
	}
}

// TestSchedulerNamePods: pods that name bindgate as their scheduler, with no
// gate (the webhook's scheduler-name mode), are bound within their policy's
// nodes with a single write: nothing to lift, no pin, the policy recorded on
// the binding.
func TestSchedulerNamePods(t *testing.T) {
	startManager(t, 16)
	p := uniq("schedname")
	pool(t, p)
	allowed := map[string]bool{}
	for range 2 {
		allowed[newNode(uniq(p+"-node")).label("pool", p).create(t).Name] = true
	}
	newNode(uniq("other")).label("pool", "none").create(t)
	ns := namespace(t, nil)
	for i := range 10 {
		newPod(ns, fmt.Sprintf("pod-%02d", i)).schedulerName().policy(p).req(corev1.ResourceCPU, "100m").create(t)
	}
	eventually(t, 60*time.Second, "10 pods bound", func() (bool, error) { return countBound(t, ns) == 10, nil })
	for _, pod := range listPods(t, ns) {
		if !allowed[pod.Spec.NodeName] {
			t.Errorf("pod %s bound to %s, outside the policy's nodes", pod.Name, pod.Spec.NodeName)
		}
		if pod.Spec.NodeSelector != nil {
			t.Errorf("pod %s was pinned (%v): a pod without the gate needs no write before its binding", pod.Name, pod.Spec.NodeSelector)
		}
		if got := pod.Annotations[bindgatev1alpha1.PolicyAnnotation]; got != p {
			t.Errorf("pod %s policy annotation = %q, want %q (from the binding)", pod.Name, got, p)
		}
	}
	waitReservationsEmpty(t, p)
}

func waitReservationsEmpty(t *testing.T, policy string) {
	t.Helper()
	eventually(t, 20*time.Second, "status.reservations of "+policy+" empty", func() (bool, error) {
		p := &bindgatev1alpha1.BindingPolicy{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: policy}, p); err != nil {
			return false, err
		}
		return len(p.Status.Reservations) == 0 && p.Status.ReservedPods == 0, nil
	})
}

// TestFilterTable places one pod per case on a fresh pool of nodes and
// expects a node or a FailedScheduling summary.
func TestFilterTable(t *testing.T) {
	startManager(t, 4)
	type nodeSpec struct {
		name string
		b    func(*nodeBuilder)
	}
	cases := map[string]struct {
		nodes    []nodeSpec
		policy   func(*bindgatev1alpha1.BindingPolicy)
		existing []func(ns, policy string) *podBuilder // bound first, in order
		pod      func(*podBuilder)
		wantNode string // suffix of the node name
		wantMsg  string // FailedScheduling message when no node fits
	}{
		"fit: the only node with room": {
			nodes:    []nodeSpec{{"small", func(b *nodeBuilder) { b.alloc(corev1.ResourceCPU, "1") }}, {"big", nil}},
			pod:      func(b *podBuilder) { b.req(corev1.ResourceCPU, "2") },
			wantNode: "big",
		},
		"fit: nowhere": {
			nodes:   []nodeSpec{{"a", nil}, {"b", nil}},
			pod:     func(b *podBuilder) { b.req(corev1.ResourceCPU, "5") },
			wantMsg: "0/2 nodes are available: 2 Insufficient cpu.",
		},
		"fit: memory and cpu summary": {
			nodes:   []nodeSpec{{"a", func(b *nodeBuilder) { b.alloc(corev1.ResourceMemory, "1Gi") }}, {"b", func(b *nodeBuilder) { b.alloc(corev1.ResourceCPU, "1") }}},
			pod:     func(b *podBuilder) { b.req(corev1.ResourceCPU, "2").req(corev1.ResourceMemory, "2Gi") },
			wantMsg: "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.",
		},
		"taint: untolerated taint excludes the node": {
			nodes:    []nodeSpec{{"tainted", func(b *nodeBuilder) { b.taint("dedicated", "gpu", corev1.TaintEffectNoSchedule) }}, {"plain", func(b *nodeBuilder) { b.alloc(corev1.ResourceCPU, "1") }}},
			pod:      func(b *podBuilder) { b.req(corev1.ResourceCPU, "100m") },
			wantNode: "plain",
		},
		"taint: tolerated taint allows the node": {
			nodes:    []nodeSpec{{"tainted", func(b *nodeBuilder) { b.taint("dedicated", "gpu", corev1.TaintEffectNoSchedule) }}},
			pod:      func(b *podBuilder) { b.tolerate("dedicated") },
			wantNode: "tainted",
		},
		"taint: summary": {
			nodes:   []nodeSpec{{"tainted", func(b *nodeBuilder) { b.taint("dedicated", "gpu", corev1.TaintEffectNoSchedule) }}},
			wantMsg: "0/1 nodes are available: 1 node(s) had untolerated taint(s).",
		},
		"affinity: the pod's nodeSelector picks the node": {
			nodes:    []nodeSpec{{"ssd", func(b *nodeBuilder) { b.label("disk", "ssd").alloc(corev1.ResourceCPU, "1") }}, {"hdd", nil}},
			pod:      func(b *podBuilder) { b.nodeSelector("disk", "ssd") },
			wantNode: "ssd",
		},
		"affinity: summary with policy nodeSelector": {
			nodes:   []nodeSpec{{"hdd", nil}},
			pod:     func(b *podBuilder) { b.nodeSelector("disk", "ssd") },
			wantMsg: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
		},
		"cordon: cordoned node skipped": {
			nodes:    []nodeSpec{{"cordoned", func(b *nodeBuilder) { b.cordoned() }}, {"open", func(b *nodeBuilder) { b.alloc(corev1.ResourceCPU, "1") }}},
			wantNode: "open",
		},
		"cordon: summary": {
			nodes:   []nodeSpec{{"cordoned", func(b *nodeBuilder) { b.cordoned() }}},
			wantMsg: "0/1 nodes are available: 1 node(s) were unschedulable.",
		},
		"extended resources: the GPU node": {
			nodes:    []nodeSpec{{"cpu", nil}, {"gpu", func(b *nodeBuilder) { b.alloc("nvidia.com/gpu", "2") }}},
			pod:      func(b *podBuilder) { b.req("nvidia.com/gpu", "1") },
			wantNode: "gpu",
		},
		"extended resources: not enough GPUs": {
			nodes:   []nodeSpec{{"gpu", func(b *nodeBuilder) { b.alloc("nvidia.com/gpu", "2") }}},
			pod:     func(b *podBuilder) { b.req("nvidia.com/gpu", "4") },
			wantMsg: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
		},
		"existing pods count: the full node is skipped": {
			nodes: []nodeSpec{{"full", nil}, {"empty", func(b *nodeBuilder) { b.alloc(corev1.ResourceCPU, "2") }}},
			existing: []func(ns, policy string) *podBuilder{
				func(ns, p string) *podBuilder {
					return newPod(ns, "filler").policy(p).req(corev1.ResourceCPU, "3500m").nodeSelector("slot", "full")
				},
			},
			pod:      func(b *podBuilder) { b.req(corev1.ResourceCPU, "1") },
			wantNode: "empty",
		},
		"capacity budget: exhausted": {
			nodes: []nodeSpec{{"a", nil}},
			policy: func(p *bindgatev1alpha1.BindingPolicy) {
				p.Spec.Capacity = map[corev1.ResourceName]bindgatev1alpha1.CapacityQuantity{corev1.ResourceCPU: {Quantity: resource.MustParse("1")}}
			},
			existing: []func(ns, policy string) *podBuilder{
				func(ns, p string) *podBuilder { return newPod(ns, "first").policy(p).req(corev1.ResourceCPU, "800m") },
			},
			pod:     func(b *podBuilder) { b.req(corev1.ResourceCPU, "500m") },
			wantMsg: "capacity exhausted for cpu",
		},
		"scoring: LeastAllocated spreads to the emptier node": {
			nodes: []nodeSpec{{"busy", func(b *nodeBuilder) { b.label("slot", "busy") }}, {"idle", nil}},
			existing: []func(ns, policy string) *podBuilder{
				func(ns, p string) *podBuilder {
					return newPod(ns, "filler").policy(p).req(corev1.ResourceCPU, "2").nodeSelector("slot", "busy")
				},
			},
			pod:      func(b *podBuilder) { b.req(corev1.ResourceCPU, "500m") },
			wantNode: "idle",
		},
		"scoring: MostAllocated packs onto the busier node": {
			nodes: []nodeSpec{{"busy", func(b *nodeBuilder) { b.label("slot", "busy") }}, {"idle", nil}},
			policy: func(p *bindgatev1alpha1.BindingPolicy) {
				p.Spec.Scoring = &bindgatev1alpha1.Scoring{Strategy: bindgatev1alpha1.MostAllocated}
			},
			existing: []func(ns, policy string) *podBuilder{
				func(ns, p string) *podBuilder {
					return newPod(ns, "filler").policy(p).req(corev1.ResourceCPU, "2").nodeSelector("slot", "busy")
				},
			},
			pod:      func(b *podBuilder) { b.req(corev1.ResourceCPU, "500m") },
			wantNode: "busy",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pname := uniq("filter")
			pool(t, pname, func(p *bindgatev1alpha1.BindingPolicy) {
				if tc.policy != nil {
					tc.policy(p)
				}
			})
			for _, n := range tc.nodes {
				b := newNode(pname+"-"+n.name).label("pool", pname).label("slot", n.name)
				if n.b != nil {
					n.b(b)
				}
				b.create(t)
			}
			ns := namespace(t, nil)
			for _, e := range tc.existing {
				pb := e(ns, pname)
				p := pb.create(t)
				eventually(t, 20*time.Second, "existing pod bound", func() (bool, error) {
					return getPod(t, ns, p.Name).Spec.NodeName != "", nil
				})
			}
			pb := newPod(ns, "subject").policy(pname)
			if tc.pod != nil {
				tc.pod(pb)
			}
			pb.create(t)
			if tc.wantNode != "" {
				eventually(t, 20*time.Second, "pod bound", func() (bool, error) { return getPod(t, ns, "subject").Spec.NodeName != "", nil })
				if got, want := getPod(t, ns, "subject").Spec.NodeName, pname+"-"+tc.wantNode; got != want {
					t.Fatalf("bound to %s, want %s", got, want)
				}
				return
			}
			eventually(t, 20*time.Second, "FailedScheduling "+tc.wantMsg, func() (bool, error) {
				return hasEvent(t, ns, "subject", "FailedScheduling", tc.wantMsg), nil
			})
			// The event is emitted just before the condition is written.
			eventually(t, 10*time.Second, "PodScheduled=False/Unschedulable with "+tc.wantMsg, func() (bool, error) {
				p := getPod(t, ns, "subject")
				if p.Spec.NodeName != "" {
					return false, fmt.Errorf("pod bound to %s, want unschedulable", p.Spec.NodeName)
				}
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && strings.Contains(c.Message, tc.wantMsg) {
						return true, nil
					}
				}
				return false, nil
			})
		})
	}
}

// TestNoOvercommitUnderContention: 300 pods, 16 workers, room for 200.
func TestNoOvercommitUnderContention(t *testing.T) {
	startManager(t, 16)
	pname := uniq("contention")
	pool(t, pname)
	for range 5 {
		// 4 CPUs each, pods of 100m: 40 per node, 200 in all.
		newNode(uniq(pname)).label("pool", pname).create(t)
	}
	ns := namespace(t, nil)
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 300; i += 10 {
				newPod(ns, fmt.Sprintf("p-%03d", i)).policy(pname).req(corev1.ResourceCPU, "100m").create(t)
			}
		}()
	}
	wg.Wait()
	eventually(t, 20*time.Second, "200 pods bound", func() (bool, error) { return countBound(t, ns) == 200, nil })
	eventually(t, 30*time.Second, "100 pods Unschedulable", func() (bool, error) {
		n := 0
		for _, p := range listPods(t, ns) {
			for _, c := range p.Status.Conditions {
				if p.Spec.NodeName == "" && c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
					n++
				}
			}
		}
		return n == 100, nil
	})
	consistently(t, 2*time.Second, "no more than 200 bound", func() bool { return countBound(t, ns) <= 200 })
	if got := countBound(t, ns); got != 200 {
		t.Fatalf("%d pods bound, want exactly 200", got)
	}
	assertNoOvercommit(t)
	waitReservationsEmpty(t, pname)
}

// TestTwoManagers runs two operators at once with leader election off and
// default flags, over several rounds of fresh pods: each pod is bound once
// and no node is ever overcommitted. The default --durable-reservations
// (auto) records every reservation when leader election is off; the
// ledger's optimistic concurrency then keeps the replicas apart.
func TestTwoManagers(t *testing.T) {
	startManager(t, 8)
	startManager(t, 8)
	rounds := 3
	if s := os.Getenv("BINDGATE_TWO_MANAGERS_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("BINDGATE_TWO_MANAGERS_ROUNDS=%q: want a positive number", s)
		}
		rounds = n
	}
	for round := range rounds {
		pname := uniq("twomgr")
		pool(t, pname)
		for range 3 {
			newNode(uniq(pname)).label("pool", pname).create(t)
		}
		ns := namespace(t, nil)
		// 3 nodes x 4 CPUs, pods of 500m: room for 24 of 40.
		for i := range 40 {
			newPod(ns, fmt.Sprintf("p-%02d", i)).policy(pname).req(corev1.ResourceCPU, "500m").create(t)
		}
		eventually(t, 60*time.Second, "24 pods bound", func() (bool, error) { return countBound(t, ns) >= 24, nil })
		consistently(t, 3*time.Second, "no more than 24 bound", func() bool { return countBound(t, ns) <= 24 })
		if got := countBound(t, ns); got != 24 {
			perNode := map[string][]string{}
			for _, p := range listPods(t, ns) {
				if p.Spec.NodeName != "" {
					perNode[p.Spec.NodeName] = append(perNode[p.Spec.NodeName], p.Name)
				}
			}
			t.Fatalf("round %d: %d pods bound, want 24; pods per node: %v", round, got, perNode)
		}
		assertNoOvercommit(t)
		for _, p := range listPods(t, ns) {
			n := 0
			for _, e := range events(t, ns, p.Name) {
				if strings.HasPrefix(e, "Scheduled: ") {
					n++
				}
			}
			if p.Spec.NodeName != "" && n == 0 {
				t.Errorf("round %d: pod %s bound without a Scheduled event", round, p.Name)
			}
		}
	}
}

// TestRestart stops the manager while reservations are recorded and starts
// a new one, which finishes every pod.
func TestRestart(t *testing.T) {
	pname := uniq("restart")
	pool(t, pname)
	for range 2 {
		newNode(uniq(pname)).label("pool", pname).create(t)
	}
	ns := namespace(t, nil)
	// Another controller's gate holds the pods after Reserve, so the first
	// manager records reservations and cannot bind.
	for i := range 20 {
		newPod(ns, fmt.Sprintf("p-%02d", i)).policy(pname).req(corev1.ResourceCPU, "300m").gate("example.com/hold").create(t)
	}
	stop := startManager(t, 8)
	eventually(t, 30*time.Second, "20 reservations recorded", func() (bool, error) {
		p := &bindgatev1alpha1.BindingPolicy{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: pname}, p); err != nil {
			return false, err
		}
		return len(p.Status.Reservations) == 20, nil
	})
	stop()
	// Release the other gate while no operator runs.
	for _, p := range listPods(t, ns) {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}}
		if err := env.Client.Update(context.Background(), &p); err != nil {
			t.Fatal(err)
		}
	}
	// Another policy's pods compete for the same nodes after the restart:
	// the recorded reservations must keep their room.
	startManager(t, 8)
	eventually(t, 60*time.Second, "20 pods bound", func() (bool, error) { return countBound(t, ns) == 20, nil })
	assertNoOvercommit(t)
	waitReservationsEmpty(t, pname)
}

func TestPodDeletedWhileReserved(t *testing.T) {
	startManager(t, 4)
	pname := uniq("deleted")
	pool(t, pname)
	newNode(uniq(pname)).label("pool", pname).create(t)
	ns := namespace(t, nil)
	p := newPod(ns, "held").policy(pname).req(corev1.ResourceCPU, "1").gate("example.com/hold").create(t)
	eventually(t, 20*time.Second, "reservation recorded", func() (bool, error) {
		pol := &bindgatev1alpha1.BindingPolicy{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: pname}, pol); err != nil {
			return false, err
		}
		return len(pol.Status.Reservations) == 1, nil
	})
	if err := env.Client.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitReservationsEmpty(t, pname)
}

// TestStaleRecordOfABoundPod: a record of a pod that is bound elsewhere
// (left by a replica that placed the pod too and recorded it after the
// other's bind and release, its watch cut meanwhile) holds nothing: the
// operator releases it as soon as it sees it, rather than keeping that
// node's capacity held in the status for good.
func TestStaleRecordOfABoundPod(t *testing.T) {
	startManager(t, 4)
	pname := uniq("stale")
	pool(t, pname)
	nodes := []string{uniq(pname), uniq(pname)}
	for _, n := range nodes {
		newNode(n).label("pool", pname).create(t)
	}
	ns := namespace(t, nil)
	newPod(ns, "bound").policy(pname).req(corev1.ResourceCPU, "1").create(t)
	eventually(t, 20*time.Second, "pod bound", func() (bool, error) { return getPod(t, ns, "bound").Spec.NodeName != "", nil })
	waitReservationsEmpty(t, pname)
	pod := getPod(t, ns, "bound")
	other := nodes[0]
	if pod.Spec.NodeName == other {
		other = nodes[1]
	}
	recordAsAnotherReplica(t, pname, pod, other, time.Now())
	waitReservationsEmpty(t, pname)
}

// recordAsAnotherReplica adds to the policy's status a reservation of pod
// (1 CPU) on node, taken at reservedAt, as another replica's ledger would.
func recordAsAnotherReplica(t *testing.T, policy string, pod *corev1.Pod, node string, reservedAt time.Time) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := getPolicy(t, policy)
		p.Status.Reservations = append(p.Status.Reservations, bindgatev1alpha1.Reservation{
			PodNamespace: pod.Namespace, PodName: pod.Name, PodUID: pod.UID, Node: node,
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, ReservedAt: metav1.NewTime(reservedAt),
		})
		p.Status.ReservedPods = int32(len(p.Status.Reservations))
		return env.Client.Status().Update(context.Background(), p)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOthersRecordReleasedOnceBound: a record this operator counted from
// the policy's status (another replica's, written after this operator's
// last status write) is taken out once the pod is bound, whichever event
// comes first: the pod bound or the record. The release used to apply to
// the status the ledger last wrote, which did not hold the record, and
// wrote nothing.
func TestOthersRecordReleasedOnceBound(t *testing.T) {
	startManager(t, 4)
	pname := uniq("bound-by-other")
	pool(t, pname)
	node := uniq(pname)
	newNode(node).label("pool", pname).create(t)
	ns := namespace(t, nil)
	// A bind of its own first: the ledger's last status is one it wrote.
	newPod(ns, "first").policy(pname).req(corev1.ResourceCPU, "100m").create(t)
	eventually(t, 20*time.Second, "first pod bound", func() (bool, error) { return getPod(t, ns, "first").Spec.NodeName != "", nil })
	waitReservationsEmpty(t, pname)
	// A pod this operator cannot place (no node has the label it selects),
	// which another replica records and binds.
	pod := newPod(ns, "theirs").policy(pname).req(corev1.ResourceCPU, "1").nodeSelector("bindgate.test/none", "true").create(t)
	eventually(t, 20*time.Second, "FailedScheduling", func() (bool, error) {
		return hasEvent(t, ns, pod.Name, "FailedScheduling", ""), nil
	})
	recordAsAnotherReplica(t, pname, pod, node, time.Now())
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := getPod(t, ns, pod.Name)
		p.Spec.SchedulingGates = nil
		return env.Client.Update(context.Background(), p)
	})
	if err != nil {
		t.Fatal(err)
	}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := env.Clientset.CoreV1().Pods(ns).Bind(context.Background(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReservationsEmpty(t, pname)
}

// TestOthersRecordKeptUntilStale: with leader election off, a recorded
// reservation this operator did not take may be another replica's, which
// binds the pod whatever this one thinks of the node. When PreBind refuses
// it (here its node is cordoned), the record stays in the status — its
// capacity held — until it is stale (30s past when it was taken); then it
// is released and the pod placed elsewhere. It used to be released at once,
// freeing capacity the other replica was about to use.
func TestOthersRecordKeptUntilStale(t *testing.T) {
	pname := uniq("others")
	pool(t, pname)
	cordoned, open := uniq(pname), uniq(pname)
	newNode(cordoned).label("pool", pname).cordoned().create(t)
	newNode(open).label("pool", pname).create(t)
	ns := namespace(t, nil)
	// No operator runs yet: the pod waits at the gate while "another
	// replica" records it on the cordoned node, 20s ago.
	pod := newPod(ns, "recorded").policy(pname).req(corev1.ResourceCPU, "1").create(t)
	recordAsAnotherReplica(t, pname, pod, cordoned, time.Now().Add(-20*time.Second))
	startManager(t, 4)
	waitReady(t, pname)
	consistently(t, 4*time.Second, "the other replica's fresh record kept", func() bool {
		rs, node := getPolicy(t, pname).Status.Reservations, getPod(t, ns, pod.Name).Spec.NodeName
		if len(rs) != 1 || node != "" {
			t.Logf("records %+v, pod on %q", rs, node)
			return false
		}
		return true
	})
	eventually(t, 30*time.Second, "pod bound to "+open+" once the record is stale", func() (bool, error) {
		return getPod(t, ns, pod.Name).Spec.NodeName == open, nil
	})
	waitReservationsEmpty(t, pname)
}

func TestNodeCordonedBetweenReserveAndBind(t *testing.T) {
	startManager(t, 4)
	pname := uniq("cordon")
	pool(t, pname)
	first := newNode(pname+"-a").label("pool", pname).create(t)
	ns := namespace(t, nil)
	newPod(ns, "mover").policy(pname).req(corev1.ResourceCPU, "1").gate("example.com/hold").create(t)
	eventually(t, 20*time.Second, "reserved on the only node", func() (bool, error) {
		pol := &bindgatev1alpha1.BindingPolicy{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: pname}, pol); err != nil {
			return false, err
		}
		return len(pol.Status.Reservations) == 1 && pol.Status.Reservations[0].Node == first.Name, nil
	})
	n := &corev1.Node{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: first.Name}, n); err != nil {
		t.Fatal(err)
	}
	n.Spec.Unschedulable = true
	if err := env.Client.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	// The second node comes after the cordon in the node watch, so once the
	// operator has placed a pod on it (a probe that fits nowhere else), its
	// cache has seen the cordon too: only then may the gate go.
	second := newNode(pname+"-b").label("pool", pname).create(t)
	newPod(ns, "probe").policy(pname).nodeSelector(corev1.LabelHostname, second.Name).create(t)
	eventually(t, 20*time.Second, "the probe bound to the second node", func() (bool, error) {
		return getPod(t, ns, "probe").Spec.NodeName == second.Name, nil
	})
	releaseGate(t, ns, "mover", "example.com/hold")
	eventually(t, 20*time.Second, "bound to the other node", func() (bool, error) {
		return getPod(t, ns, "mover").Spec.NodeName == second.Name, nil
	})
	waitReservationsEmpty(t, pname)
}

func TestOtherGateHoldsTheBind(t *testing.T) {
	startManager(t, 4)
	pname := uniq("othergate")
	pool(t, pname)
	newNode(uniq(pname)).label("pool", pname).create(t)
	ns := namespace(t, nil)
	newPod(ns, "held").policy(pname).gate("example.com/hold").create(t)
	consistently(t, 2*time.Second, "not bound while another gate remains", func() bool {
		return getPod(t, ns, "held").Spec.NodeName == ""
	})
	releaseGate(t, ns, "held", "example.com/hold")
	eventually(t, 20*time.Second, "bound after the other gate went", func() (bool, error) {
		return getPod(t, ns, "held").Spec.NodeName != "", nil
	})
}

func TestNoPolicy(t *testing.T) {
	startManager(t, 4)
	ns := namespace(t, map[string]string{"team": uniq("orphans")})
	newPod(ns, "lonely").label("app", "lonely").create(t)
	eventually(t, 20*time.Second, "NoPolicy event and condition", func() (bool, error) {
		p := getPod(t, ns, "lonely")
		for _, c := range p.Status.Conditions {
			if c.Type == bindgatev1alpha1.PodConditionPolicyMatched && c.Status == corev1.ConditionFalse && c.Reason == bindgatev1alpha1.ReasonNoPolicy {
				return hasEvent(t, ns, "lonely", "NoPolicy", "no BindingPolicy selects this pod"), nil
			}
		}
		return false, nil
	})
	// A policy that selects the namespace appears: the pod is picked up.
	nsObj := &corev1.Namespace{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	pname := uniq("late")
	pool(t, pname, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": nsObj.Labels["team"]}}
	})
	newNode(uniq(pname)).label("pool", pname).create(t)
	eventually(t, 20*time.Second, "bound once a policy exists", func() (bool, error) {
		return getPod(t, ns, "lonely").Spec.NodeName != "", nil
	})
}

func releaseGate(t *testing.T, ns, name, gate string) {
	t.Helper()
	p := getPod(t, ns, name)
	var kept []corev1.PodSchedulingGate
	for _, g := range p.Spec.SchedulingGates {
		if g.Name != gate {
			kept = append(kept, g)
		}
	}
	p.Spec.SchedulingGates = kept
	if err := env.Client.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// TestPolicyLabelCannotSteer: a pod naming, by label, a policy whose
// selectors do not select it stays gated with PolicyMatched=False and one
// event saying so; it is never bound under that policy.
func TestPolicyLabelCannotSteer(t *testing.T) {
	startManager(t, 4)
	team := uniq("team")
	ns := namespace(t, map[string]string{"team": team})
	other := uniq("other-team")
	pool(t, other, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": uniq("not-" + team)}}
	})
	newNode(uniq(other)).label("pool", other).create(t)
	newPod(ns, "steered").policy(other).req(corev1.ResourceCPU, "100m").create(t)
	eventually(t, 20*time.Second, "PolicyDoesNotSelectPod condition and event", func() (bool, error) {
		p := getPod(t, ns, "steered")
		for _, c := range p.Status.Conditions {
			if c.Type == bindgatev1alpha1.PodConditionPolicyMatched && c.Status == corev1.ConditionFalse &&
				c.Reason == bindgatev1alpha1.ReasonPolicyDoesNotSelect && strings.Contains(c.Message, other) {
				return hasEvent(t, ns, "steered", bindgatev1alpha1.ReasonPolicyDoesNotSelect, "does not select this pod"), nil
			}
		}
		return false, nil
	})
	// The policy changes (and wakes waiting pods) but still does not select
	// the pod: it stays gated and the event is not repeated.
	updatePolicy(t, other, func(p *bindgatev1alpha1.BindingPolicy) { p.Spec.Priority = 7 })
	newNode(uniq(other)).label("pool", other).create(t) // wakes waiting pods as well
	consistently(t, 2*time.Second, "the steered pod stays gated", func() bool {
		p := getPod(t, ns, "steered")
		return p.Spec.NodeName == "" && bind.HasGate(p)
	})
	p := getPod(t, ns, "steered")
	if p.Spec.NodeName != "" || !bind.HasGate(p) {
		t.Fatalf("pod steered into policy %s: node %q, gates %v", other, p.Spec.NodeName, p.Spec.SchedulingGates)
	}
	n := 0
	for _, e := range events(t, ns, "steered") {
		if strings.HasPrefix(e, bindgatev1alpha1.ReasonPolicyDoesNotSelect+": ") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d %s events, want 1: %v", n, bindgatev1alpha1.ReasonPolicyDoesNotSelect, events(t, ns, "steered"))
	}
	// Once the policy selects the namespace, the label is obeyed.
	updatePolicy(t, other, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": team}}
	})
	eventually(t, 20*time.Second, "bound once the policy selects the pod", func() (bool, error) {
		return getPod(t, ns, "steered").Spec.NodeName != "", nil
	})
}

// updatePolicy changes the policy's spec, retrying on conflicts with the
// operator's status writes.
func updatePolicy(t *testing.T, name string, change func(*bindgatev1alpha1.BindingPolicy)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &bindgatev1alpha1.BindingPolicy{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		change(p)
		return env.Client.Update(context.Background(), p)
	})
	if err != nil {
		t.Fatal(err)
	}
}
