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

package invariants_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv"
	"github.com/bindgate/bindgate/internal/testenv/invariants"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// uniq names an object apart from every other of the test process.
var uniq = testenv.Uniq

func node(t *testing.T, name, cpu string, labels map[string]string, taints ...corev1.Taint) {
	t.Helper()
	env.CreateNode(t, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("10")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	})
}

func pod(t *testing.T, ns, name, cpu, nodeName string, annotations map[string]string, gated bool) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	if gated {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}}
	}
	if err := env.Client.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if nodeName != "" {
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}, Target: corev1.ObjectReference{Kind: "Node", Name: nodeName}}
		if err := env.Clientset.CoreV1().Pods(ns).Bind(t.Context(), b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestCatchesEveryBreach builds, by hand, a cluster that breaks each
// invariant once, and checks that the checker names each with the objects
// involved; a clean namespace next to it yields nothing.
func TestCatchesEveryBreach(t *testing.T) {
	ctx := t.Context()
	ns := uniq("bad")
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	small, tainted, other := uniq("small"), uniq("tainted"), uniq("other")
	node(t, small, "1", map[string]string{"pool": "a"})
	node(t, tainted, "8", map[string]string{"pool": "a"}, corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule})
	node(t, other, "8", map[string]string{"pool": "b"})
	polName := uniq("pol")
	pol := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: polName},
		Spec: bindgatev1alpha1.BindingPolicySpec{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}}}
	if err := env.Client.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pol) })

	ch, err := invariants.Start(ctx, env.Clientset, env.Client, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Stop()
	// The checker samples the policies' specs (every 200ms).
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return ch.SawPolicy(polName), nil
	}); err != nil {
		t.Fatalf("the checker never sampled policy %s: %v", polName, err)
	}
	byPolicy := map[string]string{bindgatev1alpha1.PolicyAnnotation: polName}
	pod(t, ns, "fits", "600m", small, nil, false)
	pod(t, ns, "overcommits", "600m", small, nil, false)
	pod(t, ns, "untolerated", "100m", tainted, nil, false)
	pod(t, ns, "outside", "100m", other, byPolicy, false)
	pod(t, ns, "stuck", "100m", "", nil, true)
	held := pod(t, ns, "held", "100m", "", nil, true)
	// A reservation left for a bound pod.
	bound := &corev1.Pod{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "fits"}, bound); err != nil {
		t.Fatal(err)
	}
	pol.Status.ObservedGeneration = pol.Generation
	pol.Status.Reservations = []bindgatev1alpha1.Reservation{{PodNamespace: ns, PodName: "fits", PodUID: bound.UID, Node: small, ReservedAt: metav1.Now()}}
	if err := env.Client.Status().Update(ctx, pol); err != nil {
		t.Fatal(err)
	}
	// "held" visibly waits with a reason.
	held.Status.Conditions = []corev1.PodCondition{{Type: bindgatev1alpha1.PodConditionPermitted, Status: corev1.ConditionFalse, Reason: bindgatev1alpha1.ReasonWaiting}}
	if err := env.Client.Status().Update(ctx, held); err != nil {
		t.Fatal(err)
	}
	delivered := map[string][]string{ns + "/outside": {"a", "b"}}
	if err := ch.Final(ctx, invariants.Expect{Settle: time.Second, PostBindHook: "audit", Delivered: func() map[string][]string { return delivered }}); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, v := range ch.Violations() {
		objs := append([]string(nil), v.Objects...)
		sort.Strings(objs)
		got[v.Invariant] = append(got[v.Invariant], strings.Join(objs, ","))
	}
	// Both pods on the overcommitted node breach NodeResourcesFit; only the
	// first overcommit sample matters here.
	if len(got[invariants.NoOvercommit]) > 0 {
		got[invariants.NoOvercommit] = got[invariants.NoOvercommit][:1]
	}
	want := map[string][]string{
		invariants.NoOvercommit:       {"node " + small + ",pod " + ns + "/fits,pod " + ns + "/overcommits"},
		invariants.Constraints:        {"node " + small + ",pod " + ns + "/fits", "node " + small + ",pod " + ns + "/overcommits", "node " + tainted + ",pod " + ns + "/untolerated"},
		invariants.PolicyNodeSelector: {"node " + other + ",pod " + ns + "/outside,policy " + polName},
		invariants.Outcome:            {"pod " + ns + "/stuck"},
		invariants.Reservations:       {"node " + small + ",pod " + ns + "/fits,policy " + polName},
		invariants.PostBind:           {"pod " + ns + "/outside"},
	}
	for k := range got {
		sort.Strings(got[k])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s\nreport:\n%s", diff, ch.Report())
	}
	first, ok := ch.First()
	if !ok || first.Invariant != invariants.NoOvercommit {
		t.Errorf("first violation %v, want the overcommit seen while it happened", first)
	}
}

func TestProcess(t *testing.T) {
	for name, tc := range map[string]struct {
		base, end invariants.Process
		peak      int64
		want      []string
	}{
		"steady":         {base: invariants.Process{Goroutines: 100}, end: invariants.Process{Goroutines: 120}, peak: 100 << 20},
		"goroutine leak": {base: invariants.Process{Goroutines: 100}, end: invariants.Process{Goroutines: 400}, peak: 100 << 20, want: []string{invariants.Goroutines}},
		"memory":         {base: invariants.Process{Goroutines: 100}, end: invariants.Process{Goroutines: 100}, peak: 2 << 30, want: []string{invariants.Memory}},
	} {
		t.Run(name, func(t *testing.T) {
			ch, err := invariants.Start(t.Context(), env.Clientset, env.Client, uniq("none"))
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Stop()
			ch.CheckProcess(tc.base, tc.end, tc.peak, 50, 1<<30)
			var got []string
			for _, v := range ch.Violations() {
				got = append(got, v.Invariant)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}
