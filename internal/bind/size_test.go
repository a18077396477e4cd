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

package bind

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
)

// Budgets for what bindgate adds to a bound pod as the API server stores
// it: every later write and watch event of the pod carries those bytes
// (docs/benchmarks.md). Measured on v1.37.2 with a policy named "default":
// the sealed record adds 120 bytes; the gated path 274 (the record, the
// hostname pin and the managed-fields entry of bindgate's update).
const (
	recordBudget = 144
	gatedBudget  = 320
)

// TestStoredPodSize binds pods of the benchmark's shape each way against
// the real API server and compares the stored pods' protobuf sizes:
// bindgate's gated bind against a foreign gate lifted by a merge patch and
// a plain binding (ungate+kube-scheduler), and bindgate's binding of a pod
// naming it as scheduler against a plain binding (kube-scheduler).
func TestStoredPodSize(t *testing.T) {
	ctx := context.Background()
	UseSealKey([]byte("0123456789abcdef0123456789abcdef"))
	t.Cleanup(func() { UseSealKey(nil) })
	ns := uniq("sizes")
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: uniq("size-node"), Labels: map[string]string{HostnameLabel: "host-a"}}}
	policy := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	binder := &Binder{Client: env.Client}

	create := func(name, gate, scheduler string) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "bench"}},
			Spec: corev1.PodSpec{SchedulerName: scheduler, Containers: []corev1.Container{{
				Name: "c", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}}},
		}
		if gate != "" {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: gate}}
		}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plainBind := func(p *corev1.Pod) {
		t.Helper()
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name, UID: p.UID}, Target: corev1.ObjectReference{Kind: "Node", Name: node.Name}}
		if err := env.Client.SubResource("binding").Create(ctx, p, b); err != nil {
			t.Fatal(err)
		}
	}
	bindgateBind := func(p *corev1.Pod) {
		t.Helper()
		if st := binder.Bind(ctx, framework.NewCycleState(policy, p), p, node.Name); !st.IsSuccess() {
			t.Fatal(st.AsError())
		}
	}
	stored := func(p *corev1.Pod) int {
		t.Helper()
		got := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != node.Name {
			t.Fatalf("pod %s bound to %q, want %s", p.Name, got.Spec.NodeName, node.Name)
		}
		return got.Size()
	}

	// Gated: bindgate's ungate (update, pin, record), then its binding.
	gated := create("gated-bindgate", bindgatev1alpha1.SchedulingGate, "")
	if err := Ungate(ctx, env.Client, gated, node, policy.Name, ByUpdate); err != nil {
		t.Fatal(err)
	}
	bindgateBind(gated)
	// The same pod with a foreign gate, lifted as the benchmark's ungating
	// controller does, then bound plainly.
	foreign := create("gated-foreign", "example.com/gate", "")
	lift := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"schedulingGates":null}}`))
	if err := env.Client.Patch(ctx, foreign, lift, client.FieldOwner("ungater")); err != nil {
		t.Fatal(err)
	}
	plainBind(foreign)
	// Not gated: bindgate's binding against a plain one.
	named := create("named-bindgate", "", bindgatev1alpha1.SchedulerName)
	bindgateBind(named)
	plain := create("plain", "", "")
	plainBind(plain)

	gatedExtra, recordExtra := stored(gated)-stored(foreign), stored(named)-stored(plain)
	t.Logf("bytes bindgate adds to the stored pod: gated %d (budget %d), record alone %d (budget %d)", gatedExtra, gatedBudget, recordExtra, recordBudget)
	if recordExtra <= 0 || recordExtra > recordBudget {
		t.Errorf("bindgate's binding adds %d bytes to the stored pod, want 1..%d (the sealed record)", recordExtra, recordBudget)
	}
	if gatedExtra < recordExtra || gatedExtra > gatedBudget {
		t.Errorf("bindgate's gated bind adds %d bytes to the stored pod, want %d..%d (the record, the pin and bindgate's managed-fields entry)", gatedExtra, recordExtra, gatedBudget)
	}
}
