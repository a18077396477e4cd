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
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/controllers"
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

// draObjects creates a DeviceClass named class for a driver of its own and
// returns builders of ResourceSlices (devices on a node) and ResourceClaims
// (one device of the class). Cluster-scoped objects are deleted at the end.
func draObjects(t *testing.T, class string) (slice func(node string, devices ...string), claim func(ns, name string)) {
	t.Helper()
	ctx := context.Background()
	driver := class + ".bindgate.test"
	create := func(obj client.Object) {
		t.Helper()
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		if obj.GetNamespace() == "" {
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
		}
	}
	create(driverClass(class, driver))
	slice = func(node string, devices ...string) {
		t.Helper()
		createSlice(t, driver, uniq(class+"-slice"), node, node, devices)
	}
	claim = func(ns, name string) {
		t.Helper()
		create(&resourcev1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
				Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class},
			}}}},
		})
	}
	return slice, claim
}

// createSlice creates a ResourceSlice of driver with devices on node, the
// only slice of pool, deleted at the end of the test.
func createSlice(t *testing.T, driver, name, node, pool string, devices []string) {
	t.Helper()
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: driver, NodeName: new(node),
			Pool: resourcev1.ResourcePool{Name: pool, ResourceSliceCount: 1},
		},
	}
	for _, d := range devices {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: d})
	}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) })
}

// approvalPoolWithDevice creates a policy whose pods wait in Permit until
// approved, one node in it with one device (gpu-0), and a namespace; it
// returns them and the claim builder of draObjects.
func approvalPoolWithDevice(t *testing.T, prefix string) (pol, node, ns string, claim func(ns, name string)) {
	t.Helper()
	pol = uniq(prefix)
	pool(t, pol, withPermit(approvedExpr, 5*time.Minute, bindgatev1alpha1.PermitTimeoutReject))
	node = uniq(pol + "-n")
	newNode(node).label("pool", pol).create(t)
	waitReady(t, pol)
	slice, claim := draObjects(t, pol)
	slice(node, "gpu-0")
	return pol, node, namespace(t, nil), claim
}

// podWithClaim creates a gated pod of policy pol using ResourceClaim claim.
func podWithClaim(t *testing.T, ns, name, pol, claim string, mutate ...func(*podBuilder)) {
	t.Helper()
	b := newPod(ns, name).policy(pol)
	b.p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: new(claim)}}
	for _, m := range mutate {
		m(b)
	}
	b.create(t)
}

func getClaim(t *testing.T, ns, name string) *resourcev1.ResourceClaim {
	t.Helper()
	var c resourcev1.ResourceClaim
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestDynamicResourcesAllocated: as the single active replica, bindgate
// allocates a pod's ResourceClaim with kube-scheduler's DynamicResources
// plugin (Filter, Reserve, PreBind) and binds the pod to the node of the
// device; a second pod whose claim finds no free device is refused with
// kube-scheduler's reason and stays unbound, until a device appears.
func TestDynamicResourcesAllocated(t *testing.T) {
	startManager(t, 4, func(o *controllers.Options) { o.LeaderElection = true })
	pol := uniq("dra-alloc")
	pool(t, pol)
	nodes := []string{uniq(pol + "-n"), uniq(pol + "-n")}
	for _, n := range nodes {
		newNode(n).label("pool", pol).create(t)
	}
	waitReady(t, pol)
	slice, claim := draObjects(t, pol)
	// One device, on the second node only.
	slice(nodes[1], "gpu-0")
	ns := namespace(t, nil)
	claim(ns, "c1")
	claim(ns, "c2")
	podWithClaim(t, ns, "p1", pol, "c1")
	bound := settled(t, ns, 1)
	if bound["p1"] != nodes[1] {
		t.Fatalf("p1 bound to %q, want %s, the node of the only device", bound["p1"], nodes[1])
	}
	c1 := getClaim(t, ns, "c1")
	p1 := getPod(t, ns, "p1")
	if a := c1.Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Device != "gpu-0" || a.Devices.Results[0].Pool != nodes[1] {
		t.Fatalf("claim c1 allocation = %+v, want gpu-0 of pool %s", c1.Status.Allocation, nodes[1])
	}
	if len(c1.Status.ReservedFor) != 1 || c1.Status.ReservedFor[0].UID != p1.UID {
		t.Errorf("claim c1 reservedFor = %+v, want pod p1 (%s)", c1.Status.ReservedFor, p1.UID)
	}

	podWithClaim(t, ns, "p2", pol, "c2")
	eventually(t, 20*time.Second, "p2 refused: no device left", func() (bool, error) {
		return strings.Contains(podScheduledMessage(t, ns, "p2"), "cannot allocate all claims"), nil
	})
	if n := getPod(t, ns, "p2").Spec.NodeName; n != "" {
		t.Fatalf("p2 bound to %s without a device", n)
	}
	if a := getClaim(t, ns, "c2").Status.Allocation; a != nil {
		t.Fatalf("claim c2 allocated %+v with no device free", a)
	}
	// A device on the first node: p2 goes there.
	slice(nodes[0], "gpu-1")
	eventually(t, 20*time.Second, "p2 bound once a device appears", func() (bool, error) {
		return getPod(t, ns, "p2").Spec.NodeName != "", nil
	})
	if n := getPod(t, ns, "p2").Spec.NodeName; n != nodes[0] {
		t.Errorf("p2 bound to %q, want %s, the node of the new device", n, nodes[0])
	}
	if a := getClaim(t, ns, "c2").Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Device != "gpu-1" {
		t.Errorf("claim c2 allocation = %+v, want gpu-1", a)
	}
}

// TestDynamicResourcesHeldWhileWaiting: a pod waiting in Permit holds its
// device as kube-scheduler's assumed pod does (a second pod does not get
// it), and after the approval its claim is allocated that device and the
// pod bound; the cycle that checks the node again after the wait runs the
// DynamicResources plugin again.
func TestDynamicResourcesHeldWhileWaiting(t *testing.T) {
	startManager(t, 4, func(o *controllers.Options) { o.LeaderElection = true })
	pol, node, ns, claim := approvalPoolWithDevice(t, "dra-wait")
	claim(ns, "c1")
	claim(ns, "c2")
	podWithClaim(t, ns, "p1", pol, "c1")
	eventually(t, 20*time.Second, "p1 waits in Permit", func() (bool, error) {
		return strings.Contains(permittedMessage(t, ns, "p1"), "expression is false"), nil
	})
	podWithClaim(t, ns, "p2", pol, "c2", func(b *podBuilder) {
		b.p.Annotations = map[string]string{approvedAnnotation: "true"}
	})
	eventually(t, 20*time.Second, "p2 refused: p1 holds the device", func() (bool, error) {
		return strings.Contains(podScheduledMessage(t, ns, "p2"), "cannot allocate all claims"), nil
	})
	if a := getClaim(t, ns, "c1").Status.Allocation; a != nil {
		t.Fatalf("claim c1 allocated before p1 was permitted: %+v", a)
	}
	p := getPod(t, ns, "p1")
	p.Annotations = map[string]string{approvedAnnotation: "true"}
	if err := env.Client.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "p1 bound after approval", func() (bool, error) {
		return getPod(t, ns, "p1").Spec.NodeName == node, nil
	})
	c1 := getClaim(t, ns, "c1")
	if a := c1.Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Device != "gpu-0" {
		t.Fatalf("claim c1 allocation = %+v, want gpu-0", a)
	}
	if len(c1.Status.ReservedFor) != 1 || c1.Status.ReservedFor[0].Name != "p1" {
		t.Errorf("claim c1 reservedFor = %+v, want p1", c1.Status.ReservedFor)
	}
	if n := getPod(t, ns, "p2").Spec.NodeName; n != "" {
		t.Errorf("p2 bound to %s: two pods on one device", n)
	}
}

// TestDynamicResourcesAfterRestart: a pod waiting in Permit when the
// operator stops holds a recorded reservation but no device (devices in
// flight live in memory, as in kube-scheduler); the next operator checks the
// node again with the DynamicResources plugin, allocates its claim and binds
// it after the approval.
func TestDynamicResourcesAfterRestart(t *testing.T) {
	leader := func(o *controllers.Options) { o.LeaderElection = true }
	stop := startManager(t, 4, leader)
	pol, node, ns, claim := approvalPoolWithDevice(t, "dra-restart")
	claim(ns, "c1")
	podWithClaim(t, ns, "p1", pol, "c1")
	eventually(t, 20*time.Second, "p1 waits in Permit, recorded", func() (bool, error) {
		return len(getPolicy(t, pol).Status.Reservations) == 1 && strings.Contains(permittedMessage(t, ns, "p1"), "expression is false"), nil
	})
	stop()
	startManager(t, 4, leader)
	p := getPod(t, ns, "p1")
	p.Annotations = map[string]string{approvedAnnotation: "true"}
	if err := env.Client.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "p1 bound after the restart and the approval", func() (bool, error) {
		return getPod(t, ns, "p1").Spec.NodeName == node, nil
	})
	if a := getClaim(t, ns, "c1").Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Device != "gpu-0" {
		t.Errorf("claim c1 allocation = %+v, want gpu-0", a)
	}
}

// TestDynamicResourcesDeallocated: a claim allocated (reserved for nobody)
// on a device of a node that no longer takes the pod is deallocated by
// DynamicResources' PostFilter, as kube-scheduler does, and allocated again
// on a node that does: the pod is not stuck behind its old allocation.
func TestDynamicResourcesDeallocated(t *testing.T) {
	startManager(t, 4, func(o *controllers.Options) { o.LeaderElection = true })
	pol := uniq("dra-dealloc")
	pool(t, pol)
	gone, other := uniq(pol+"-n"), uniq(pol+"-n")
	newNode(gone).label("pool", pol).cordoned().create(t)
	newNode(other).label("pool", pol).create(t)
	waitReady(t, pol)
	slice, claim := draObjects(t, pol)
	slice(gone, "gpu-0")
	slice(other, "gpu-1")
	ns := namespace(t, nil)
	claim(ns, "c1")
	// Allocated on the cordoned node, as a bind that failed there would
	// have left it.
	c := getClaim(t, ns, "c1")
	c.Status.Allocation = &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
			Request: "gpu", Driver: pol + ".bindgate.test", Pool: gone, Device: "gpu-0",
		}}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{gone}}},
		}}},
	}
	if err := env.Client.Status().Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	podWithClaim(t, ns, "p1", pol, "c1")
	eventually(t, 20*time.Second, "p1 bound after its claim was allocated again", func() (bool, error) {
		return getPod(t, ns, "p1").Spec.NodeName != "", nil
	})
	if n := getPod(t, ns, "p1").Spec.NodeName; n != other {
		t.Errorf("p1 bound to %s, want %s", n, other)
	}
	if a := getClaim(t, ns, "c1").Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Device != "gpu-1" {
		t.Errorf("claim c1 allocation = %+v, want gpu-1 on %s", a, other)
	}
}

// TestDRADenied: the operator checks at start that it may do what DRA
// needs; a process whose RBAC does not allow it refuses DRA pods rather
// than wait forever for informers that may not list.
func TestDRADenied(t *testing.T) {
	if denied := controllers.DRADenied(context.Background(), env.Clientset, true); denied != "" {
		t.Errorf("the admin is denied %q", denied)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: uniq("no-dra"), Groups: []string{"system:authenticated"}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if denied := controllers.DRADenied(context.Background(), cs, false); denied != "list resourceclaims" {
		t.Errorf("a user with no rights is denied %q, want %q", denied, "list resourceclaims")
	}
}

// TestDynamicResourcesRefused: a pod with resourceClaims is never bound
// without its devices: replicas running side by side (no leader election)
// refuse it with a reason naming DRA.
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

// driverClass is a DeviceClass named name of every device of driver.
func driverClass(name, driver string) *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)},
		}}},
	}
}

// extendedResourceClass creates a DeviceClass of a driver of its own whose
// devices back the extended resource it returns (DRAExtendedResource, GA
// in Kubernetes 1.37), and returns the builder of ResourceSlices of draObjects.
func extendedResourceClass(t *testing.T, class string) (resourceName corev1.ResourceName, slice func(node string, devices ...string)) {
	t.Helper()
	ctx := context.Background()
	driver := class + ".bindgate.test"
	resourceName = corev1.ResourceName("bindgate.test/" + class)
	dc := driverClass(class, driver)
	dc.Spec.ExtendedResourceName = new(string(resourceName))
	if err := env.Client.Create(ctx, dc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), dc) })
	slice = func(node string, devices ...string) {
		t.Helper()
		// A pool of its own: a node may get devices more than once.
		name := uniq(class + "-slice")
		createSlice(t, driver, name, node, name, devices)
	}
	return resourceName, slice
}

// TestDynamicResourcesExtendedResource: a gated pod that requests an
// extended resource backed by a DeviceClass (no resourceClaims of its own)
// is handled as kube-scheduler handles it: DynamicResources allocates a
// device on the node, creates the pod's ResourceClaim in PreBind and records
// it in the pod's status (extendedResourceClaimStatus), and the pod is
// bound there; a second pod finds no device left and is refused, unbound.
func TestDynamicResourcesExtendedResource(t *testing.T) {
	startManager(t, 4, func(o *controllers.Options) { o.LeaderElection = true })
	pol := uniq("dra-ext")
	pool(t, pol)
	nodes := []string{uniq(pol + "-n"), uniq(pol + "-n")}
	for _, n := range nodes {
		newNode(n).label("pool", pol).create(t)
	}
	waitReady(t, pol)
	res, slice := extendedResourceClass(t, pol)
	// One device, on the second node only.
	slice(nodes[1], "gpu-0")
	ns := namespace(t, nil)
	newPod(ns, "p1").policy(pol).req(res, "1").create(t)
	bound := settled(t, ns, 1)
	if bound["p1"] != nodes[1] {
		t.Fatalf("p1 bound to %q (%s), want %s, the node of the only device", bound["p1"], podScheduledMessage(t, ns, "p1"), nodes[1])
	}
	p1 := getPod(t, ns, "p1")
	st := p1.Status.ExtendedResourceClaimStatus
	if st == nil || st.ResourceClaimName == "" || len(st.RequestMappings) != 1 || st.RequestMappings[0].ResourceName != string(res) {
		t.Fatalf("p1 extendedResourceClaimStatus = %+v, want the claim of %s", st, res)
	}
	c := getClaim(t, ns, st.ResourceClaimName)
	if a := c.Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Device != "gpu-0" {
		t.Fatalf("claim %s allocation = %+v, want gpu-0", c.Name, c.Status.Allocation)
	}
	if len(c.Status.ReservedFor) != 1 || c.Status.ReservedFor[0].UID != p1.UID {
		t.Errorf("claim %s reservedFor = %+v, want pod p1 (%s)", c.Name, c.Status.ReservedFor, p1.UID)
	}

	newPod(ns, "p2").policy(pol).req(res, "1").create(t)
	eventually(t, 20*time.Second, "p2 refused: no device left", func() (bool, error) {
		return podScheduledMessage(t, ns, "p2") != "", nil
	})
	if n := getPod(t, ns, "p2").Spec.NodeName; n != "" {
		t.Fatalf("p2 bound to %s without a device", n)
	}
	var claims resourcev1.ResourceClaimList
	if err := env.Client.List(context.Background(), &claims, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 1 {
		names := make([]string, 0, len(claims.Items))
		for _, c := range claims.Items {
			names = append(names, c.Name)
		}
		t.Errorf("claims in %s: %v, want only p1's", ns, names)
	}

	// A device on the first node: p2 goes there, and so does a pod that
	// names bindgate as its scheduler (no gate to lift) once a third
	// device appears.
	slice(nodes[0], "gpu-1")
	eventually(t, 20*time.Second, "p2 bound once a device appears", func() (bool, error) {
		return getPod(t, ns, "p2").Spec.NodeName == nodes[0], nil
	})
	slice(nodes[0], "gpu-2")
	newPod(ns, "s1").schedulerName().policy(pol).req(res, "1").create(t)
	eventually(t, 20*time.Second, "s1 bound", func() (bool, error) {
		return getPod(t, ns, "s1").Spec.NodeName == nodes[0], nil
	})
	for name, device := range map[string]string{"p2": "gpu-1", "s1": "gpu-2"} {
		st := getPod(t, ns, name).Status.ExtendedResourceClaimStatus
		if st == nil {
			t.Errorf("%s bound without extendedResourceClaimStatus", name)
			continue
		}
		if a := getClaim(t, ns, st.ResourceClaimName).Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Device != device {
			t.Errorf("%s's claim allocation = %+v, want %s", name, a, device)
		}
	}
}

// TestDynamicResourcesExtendedResourceLeftover: the claim of a DRA extended
// resource that an earlier, failed bind left behind (kube-scheduler's
// DynamicResources then refuses every node: "cannot schedule extended
// resource claim") is deleted by its PostFilter, as in kube-scheduler, and
// the pod is bound with a claim of its own: it is not stuck behind it.
func TestDynamicResourcesExtendedResourceLeftover(t *testing.T) {
	startManager(t, 4, func(o *controllers.Options) { o.LeaderElection = true })
	ctx := context.Background()
	pol := uniq("dra-left")
	pool(t, pol)
	node := uniq(pol + "-n")
	newNode(node).label("pool", pol).create(t)
	waitReady(t, pol)
	res, slice := extendedResourceClass(t, pol)
	slice(node, "gpu-0")
	ns := namespace(t, nil)
	// Another controller's gate holds the pod after its reservation.
	const hold = "bindgate.test/hold"
	b := newPod(ns, "p1").policy(pol).req(res, "1")
	b.p.Spec.SchedulingGates = append(b.p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: hold})
	b.create(t)
	p1 := getPod(t, ns, "p1")
	leftover := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "p1-extended-resources-left",
			Annotations:     map[string]string{resourcev1.ExtendedResourceClaimAnnotation: "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p1", UID: p1.UID, Controller: new(true)}},
		},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "container-0-request-0", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: pol},
		}}}},
	}
	if err := env.Client.Create(ctx, leftover); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the other gate lifted", func() (bool, error) {
		p := getPod(t, ns, "p1")
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}}
		if err := env.Client.Update(ctx, p); err != nil {
			if apierrors.IsConflict(err) {
				return false, nil
			}
			return false, err
		}
		return true, nil
	})
	eventually(t, 30*time.Second, "p1 bound", func() (bool, error) {
		return getPod(t, ns, "p1").Spec.NodeName == node, nil
	})
	st := getPod(t, ns, "p1").Status.ExtendedResourceClaimStatus
	if st == nil || st.ResourceClaimName == leftover.Name {
		t.Fatalf("p1 extendedResourceClaimStatus = %+v, want a claim other than the leftover %s", st, leftover.Name)
	}
	if a := getClaim(t, ns, st.ResourceClaimName).Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Device != "gpu-0" {
		t.Errorf("claim %s allocation = %+v, want gpu-0", st.ResourceClaimName, a)
	}
	var gone resourcev1.ResourceClaim
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(leftover), &gone); err == nil && gone.DeletionTimestamp == nil {
		t.Errorf("the leftover claim %s is still there", leftover.Name)
	}
}

// TestDynamicResourcesExtendedResourceRefused: without DRA (replicas side by
// side), a pod asking for an extended resource that only a DeviceClass
// backs is never bound without its device, and is refused with a reason
// naming DRA; a node that advertises the resource (a device plugin) takes
// it, as kube-scheduler's NodeResourcesFit decides.
func TestDynamicResourcesExtendedResourceRefused(t *testing.T) {
	startManager(t, 4)
	pol := uniq("dra-ext-off")
	pool(t, pol)
	node := uniq(pol + "-n")
	newNode(node).label("pool", pol).create(t)
	waitReady(t, pol)
	res, slice := extendedResourceClass(t, pol)
	slice(node, "gpu-0")
	ns := namespace(t, nil)
	newPod(ns, "p1").policy(pol).req(res, "1").create(t)
	want := placement.ErrReasonDRAExtendedResource(res, placement.ErrReasonDRA)
	eventually(t, 10*time.Second, "refused naming DRA", func() (bool, error) {
		return strings.Contains(podScheduledMessage(t, ns, "p1"), want), nil
	})
	if n := getPod(t, ns, "p1").Spec.NodeName; n != "" {
		t.Fatalf("pod bound to %s without its device", n)
	}
	// A node whose device plugin advertises the resource takes the pod.
	plugin := uniq(pol + "-n")
	newNode(plugin).label("pool", pol).alloc(res, "1").create(t)
	eventually(t, 20*time.Second, "bound on the device plugin's node", func() (bool, error) {
		return getPod(t, ns, "p1").Spec.NodeName == plugin, nil
	})
}
