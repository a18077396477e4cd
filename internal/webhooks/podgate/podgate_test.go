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

package podgate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv"
	"github.com/bindgate/bindgate/internal/webhooks/podgate"
)

func pod(ns, name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func withPolicyLabel(p *corev1.Pod) {
	p.Labels = map[string]string{bindgatev1alpha1.PolicyLabel: "pool"}
}

func withGate(p *corev1.Pod) {
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}}
}

func withOtherGate(p *corev1.Pod) {
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/other"}}
}

func gates(p *corev1.Pod) []string {
	var names []string
	for _, g := range p.Spec.SchedulingGates {
		names = append(names, g.Name)
	}
	return names
}

func TestHandler(t *testing.T) {
	const gate = bindgatev1alpha1.SchedulingGate
	cases := []struct {
		name string
		op   admissionv1.Operation
		pod  *corev1.Pod
		want []string // gates after the patch; nil: no patch
	}{
		{"plain pod", admissionv1.Create, pod("ns", "a"), []string{gate}},
		{"null gates", admissionv1.Create, pod("ns", "a", func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{} }), []string{gate}},
		{"other gate kept", admissionv1.Create, pod("ns", "a", withOtherGate), []string{"example.com/other", gate}},
		{"already gated", admissionv1.Create, pod("ns", "a", withGate), nil},
		{"assigned to a node", admissionv1.Create, pod("ns", "a", func(p *corev1.Pod) { p.Spec.NodeName = "n1" }), nil},
		{"update", admissionv1.Update, pod("ns", "a"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: tc.op,
				Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Object:    runtime.RawExtension{Raw: raw},
			}}
			resp := podgate.Handler{}.Handle(context.Background(), req)
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			if tc.want == nil {
				if len(resp.Patches) != 0 {
					t.Fatalf("want no patch, got %v", resp.Patches)
				}
				return
			}
			// Apply the patch the way the API server does.
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			patched := applyAdd(t, doc, resp.Patches[0].Path, resp.Patches[0].Value)
			got := &corev1.Pod{}
			data, _ := json.Marshal(patched)
			if err := json.Unmarshal(data, got); err != nil {
				t.Fatal(err)
			}
			if g := gates(got); !equal(g, tc.want) {
				t.Fatalf("gates = %v, want %v", g, tc.want)
			}
		})
	}
}

// applyAdd applies the two "add" operations the handler emits.
func applyAdd(t *testing.T, doc map[string]any, path string, value any) map[string]any {
	t.Helper()
	spec := doc["spec"].(map[string]any)
	v, _ := json.Marshal(value)
	var decoded any
	_ = json.Unmarshal(v, &decoded)
	switch path {
	case "/spec/schedulingGates":
		spec["schedulingGates"] = decoded
	case "/spec/schedulingGates/-":
		spec["schedulingGates"] = append(spec["schedulingGates"].([]any), decoded)
	default:
		t.Fatalf("unexpected patch path %q", path)
	}
	return doc
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestWebhookEnvtest installs the generated webhook configuration in a real
// API server and checks which pods come back gated.
func TestWebhookEnvtest(t *testing.T) {
	if testing.Short() {
		t.Skip("envtest suite; run without -short")
	}
	env, err := testenv.Start(testenv.WithWebhooks(testenv.DefaultWebhookManifests))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })

	env.ServeWebhooks(t, podgate.Setup)
	ctx := context.Background()

	c := env.Client
	enabled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: "enabled", Labels: map[string]string{bindgatev1alpha1.EnabledNamespaceLabel: "true"},
	}}
	plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	for _, ns := range []*corev1.Namespace{enabled, plain} {
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}

	// failurePolicy is Ignore, so until the server answers (and the API
	// server has seen the configuration) pods pass ungated: wait with
	// dry-run creates, which the webhook (sideEffects: None) also sees.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			p := pod(enabled.Name, "probe")
			if err := c.Create(ctx, p, client.DryRunAll); err != nil {
				return false, err
			}
			return len(p.Spec.SchedulingGates) == 1, nil
		}); err != nil {
		t.Fatalf("the webhook never answered: %v", err)
	}

	cases := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"enabled namespace", pod(enabled.Name, "a"), []string{bindgatev1alpha1.SchedulingGate}},
		{"plain namespace", pod(plain.Name, "b"), nil},
		{"policy label in plain namespace", pod(plain.Name, "c", withPolicyLabel), []string{bindgatev1alpha1.SchedulingGate}},
		{"policy label in enabled namespace (both webhooks)", pod(enabled.Name, "d", withPolicyLabel), []string{bindgatev1alpha1.SchedulingGate}},
		{"already gated", pod(enabled.Name, "e", withGate, withPolicyLabel), []string{bindgatev1alpha1.SchedulingGate}},
		{"other gate kept", pod(enabled.Name, "f", withOtherGate), []string{"example.com/other", bindgatev1alpha1.SchedulingGate}},
		{"assigned to a node", pod(enabled.Name, "g", func(p *corev1.Pod) { p.Spec.NodeName = "n1" }), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.Create(ctx, tc.pod); err != nil {
				t.Fatal(err)
			}
			got := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(tc.pod), got); err != nil {
				t.Fatal(err)
			}
			if g := gates(got); !equal(g, tc.want) {
				t.Fatalf("gates = %v, want %v", g, tc.want)
			}
		})
	}

	// Updates are not mutated: a pod whose gate was removed stays ungated.
	t.Run("update not mutated", func(t *testing.T) {
		got := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: enabled.Name, Name: "a"}, got); err != nil {
			t.Fatal(err)
		}
		got.Spec.SchedulingGates = nil
		if err := c.Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		if len(got.Spec.SchedulingGates) != 0 {
			t.Fatalf("gates = %v after update, want none", gates(got))
		}
	})
}
