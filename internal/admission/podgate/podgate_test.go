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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/admission/podgate"
	"github.com/bindgate/bindgate/internal/testenv"
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
	type want struct {
		Gates         []string
		SchedulerName string
	}
	withScheduler := func(name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.SchedulerName = name }
	}
	cases := map[string]struct {
		mode podgate.Mode
		op   admissionv1.Operation
		pod  *corev1.Pod
		want *want // nil: no patch
	}{
		"gate: plain pod":                            {mode: podgate.ModeGate, op: admissionv1.Create, pod: pod("ns", "a"), want: &want{Gates: []string{gate}}},
		"gate: empty mode is gate":                   {op: admissionv1.Create, pod: pod("ns", "a"), want: &want{Gates: []string{gate}}},
		"gate: null gates":                           {mode: podgate.ModeGate, op: admissionv1.Create, pod: pod("ns", "a", func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{} }), want: &want{Gates: []string{gate}}},
		"gate: other gate kept":                      {mode: podgate.ModeGate, op: admissionv1.Create, pod: pod("ns", "a", withOtherGate), want: &want{Gates: []string{"example.com/other", gate}}},
		"gate: already gated":                        {mode: podgate.ModeGate, op: admissionv1.Create, pod: pod("ns", "a", withGate)},
		"gate: assigned to a node":                   {mode: podgate.ModeGate, op: admissionv1.Create, pod: pod("ns", "a", func(p *corev1.Pod) { p.Spec.NodeName = "n1" })},
		"gate: update":                               {mode: podgate.ModeGate, op: admissionv1.Update, pod: pod("ns", "a")},
		"scheduler-name: default":                    {mode: podgate.ModeSchedulerName, op: admissionv1.Create, pod: pod("ns", "a", withScheduler(corev1.DefaultSchedulerName)), want: &want{SchedulerName: bindgatev1alpha1.SchedulerName}},
		"scheduler-name: unset":                      {mode: podgate.ModeSchedulerName, op: admissionv1.Create, pod: pod("ns", "a"), want: &want{SchedulerName: bindgatev1alpha1.SchedulerName}},
		"scheduler-name: other gate kept":            {mode: podgate.ModeSchedulerName, op: admissionv1.Create, pod: pod("ns", "a", withOtherGate), want: &want{Gates: []string{"example.com/other"}, SchedulerName: bindgatev1alpha1.SchedulerName}},
		"scheduler-name: another scheduler is gated": {mode: podgate.ModeSchedulerName, op: admissionv1.Create, pod: pod("ns", "a", withScheduler("volcano")), want: &want{Gates: []string{gate}, SchedulerName: "volcano"}},
		"scheduler-name: already bindgate's":         {mode: podgate.ModeSchedulerName, op: admissionv1.Create, pod: pod("ns", "a", withScheduler(bindgatev1alpha1.SchedulerName))},
		"scheduler-name: already gated":              {mode: podgate.ModeSchedulerName, op: admissionv1.Create, pod: pod("ns", "a", withGate)},
		"scheduler-name: assigned to a node":         {mode: podgate.ModeSchedulerName, op: admissionv1.Create, pod: pod("ns", "a", func(p *corev1.Pod) { p.Spec.NodeName = "n1" })},
		"scheduler-name: update":                     {mode: podgate.ModeSchedulerName, op: admissionv1.Update, pod: pod("ns", "a")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: tc.op,
				Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Object:    runtime.RawExtension{Raw: raw},
			}}
			resp := podgate.Handler{Mode: tc.mode}.Handle(context.Background(), req)
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
			for _, op := range resp.Patches {
				doc = applyAdd(t, doc, op.Path, op.Value)
			}
			got := &corev1.Pod{}
			data, _ := json.Marshal(doc)
			if err := json.Unmarshal(data, got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(*tc.want, want{Gates: gates(got), SchedulerName: got.Spec.SchedulerName}); diff != "" {
				t.Errorf("pod after the patch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseMode: the two modes, and a clear error naming the flag.
func TestParseMode(t *testing.T) {
	for _, s := range []string{"gate", "scheduler-name"} {
		if m, err := podgate.ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	_, err := podgate.ParseMode("schedulerName")
	if err == nil || !strings.Contains(err.Error(), "--pod-webhook-mode") {
		t.Errorf("ParseMode(schedulerName) error = %v, want one naming --pod-webhook-mode", err)
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
	case "/spec/schedulerName":
		spec["schedulerName"] = decoded
	case "/spec/schedulingGates":
		spec["schedulingGates"] = decoded
	case "/spec/schedulingGates/-":
		spec["schedulingGates"] = append(spec["schedulingGates"].([]any), decoded)
	default:
		t.Fatalf("unexpected patch path %q", path)
	}
	return doc
}

// TestAdmissionEnvtest installs the generated webhook configuration in a real
// API server, serves the handler in each mode and checks which pods come
// back gated or naming bindgate as their scheduler.
func TestAdmissionEnvtest(t *testing.T) {
	if testing.Short() {
		t.Skip("envtest suite; run without -short")
	}
	const (
		gate      = bindgatev1alpha1.SchedulingGate
		bindgate  = bindgatev1alpha1.SchedulerName
		defaultSN = corev1.DefaultSchedulerName
	)
	type want struct {
		Gates         []string
		SchedulerName string
	}
	type podCase struct {
		name string
		pod  func(enabled, plain string) *corev1.Pod
		want want
	}
	assigned := func(p *corev1.Pod) { p.Spec.NodeName = "n1" }
	volcano := func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" }
	modes := map[podgate.Mode][]podCase{
		podgate.ModeGate: {
			{"enabled namespace", func(e, _ string) *corev1.Pod { return pod(e, "a") }, want{[]string{gate}, defaultSN}},
			{"plain namespace", func(_, p string) *corev1.Pod { return pod(p, "b") }, want{nil, defaultSN}},
			{"policy label in plain namespace", func(_, p string) *corev1.Pod { return pod(p, "c", withPolicyLabel) }, want{[]string{gate}, defaultSN}},
			{"policy label in enabled namespace (both webhooks)", func(e, _ string) *corev1.Pod { return pod(e, "d", withPolicyLabel) }, want{[]string{gate}, defaultSN}},
			{"already gated", func(e, _ string) *corev1.Pod { return pod(e, "e", withGate, withPolicyLabel) }, want{[]string{gate}, defaultSN}},
			{"other gate kept", func(e, _ string) *corev1.Pod { return pod(e, "f", withOtherGate) }, want{[]string{"example.com/other", gate}, defaultSN}},
			{"assigned to a node", func(e, _ string) *corev1.Pod { return pod(e, "g", assigned) }, want{nil, defaultSN}},
		},
		podgate.ModeSchedulerName: {
			{"enabled namespace", func(e, _ string) *corev1.Pod { return pod(e, "a") }, want{nil, bindgate}},
			{"plain namespace", func(_, p string) *corev1.Pod { return pod(p, "b") }, want{nil, defaultSN}},
			{"policy label in plain namespace", func(_, p string) *corev1.Pod { return pod(p, "c", withPolicyLabel) }, want{nil, bindgate}},
			{"policy label in enabled namespace (both webhooks)", func(e, _ string) *corev1.Pod { return pod(e, "d", withPolicyLabel) }, want{nil, bindgate}},
			{"another scheduler is gated", func(e, _ string) *corev1.Pod { return pod(e, "e", volcano) }, want{[]string{gate}, "volcano"}},
			{"other gate kept", func(e, _ string) *corev1.Pod { return pod(e, "f", withOtherGate) }, want{[]string{"example.com/other"}, bindgate}},
			{"assigned to a node", func(e, _ string) *corev1.Pod { return pod(e, "g", assigned) }, want{nil, defaultSN}},
		},
	}
	for mode, cases := range modes {
		t.Run(string(mode), func(t *testing.T) {
			env, err := testenv.Start(testenv.WithAdmission(testenv.DefaultAdmissionManifests))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Stop() })
			env.ServeAdmission(t, func(mgr ctrl.Manager) error { return podgate.Setup(mgr, mode) })
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

			// Until the server answers, creates fail (failurePolicy Fail):
			// wait with dry-run creates, which the webhook (sideEffects:
			// None) also sees.
			if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true,
				func(ctx context.Context) (bool, error) {
					p := pod(enabled.Name, "probe")
					if err := c.Create(ctx, p, client.DryRunAll); err != nil {
						return false, nil
					}
					return len(p.Spec.SchedulingGates) == 1 || p.Spec.SchedulerName == bindgate, nil
				}); err != nil {
				t.Fatalf("the webhook never answered: %v", err)
			}

			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					p := tc.pod(enabled.Name, plain.Name)
					if err := c.Create(ctx, p); err != nil {
						t.Fatal(err)
					}
					got := &corev1.Pod{}
					if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(tc.want, want{gates(got), got.Spec.SchedulerName}); diff != "" {
						t.Errorf("pod as created (-want +got):\n%s", diff)
					}
				})
			}

			// Updates are not mutated: a pod whose gate was removed stays
			// ungated.
			t.Run("update not mutated", func(t *testing.T) {
				p := pod(plain.Name, "u", withOtherGate)
				if err := c.Create(ctx, p); err != nil {
					t.Fatal(err)
				}
				p.Labels = map[string]string{bindgatev1alpha1.PolicyLabel: "pool"}
				p.Spec.SchedulingGates = nil
				if err := c.Update(ctx, p); err != nil {
					t.Fatal(err)
				}
				if len(p.Spec.SchedulingGates) != 0 || p.Spec.SchedulerName != defaultSN {
					t.Fatalf("after update: gates %v, schedulerName %q; want none and %q", gates(p), p.Spec.SchedulerName, defaultSN)
				}
			})
		})
	}
}

// TestAdmissionFailsClosed: with no webhook server answering, pods that opted
// in (enabled namespace, policy label) are refused rather than admitted past
// bindgate; other pods, and every pod of the system namespaces and the
// operator's own, are admitted.
func TestAdmissionFailsClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("envtest suite; run without -short")
	}
	env, err := testenv.Start(testenv.WithAdmission(testenv.DefaultAdmissionManifests))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	c := env.Client
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "enabled", Labels: map[string]string{bindgatev1alpha1.EnabledNamespaceLabel: "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bindgate-system", Labels: map[string]string{bindgatev1alpha1.EnabledNamespaceLabel: "true"}}},
	} {
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	// kube-system exists; label it as if someone opted it in by mistake.
	ks := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ks); err != nil {
		t.Fatal(err)
	}
	ks.Labels[bindgatev1alpha1.EnabledNamespaceLabel] = "true"
	if err := c.Update(ctx, ks); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		pod     *corev1.Pod
		refused bool
	}{
		"enabled namespace":                 {pod: pod("enabled", "a"), refused: true},
		"policy label in plain namespace":   {pod: pod("plain", "b", withPolicyLabel), refused: true},
		"plain namespace":                   {pod: pod("plain", "c")},
		"already gated, plain namespace":    {pod: pod("plain", "d", withGate)},
		"kube-system, enabled and labelled": {pod: pod(metav1.NamespaceSystem, "e", withPolicyLabel)},
		"the operator's namespace":          {pod: pod("bindgate-system", "f", withPolicyLabel)},
	}
	// The API server loads the configuration asynchronously: wait until an
	// opted-in pod is refused.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			return c.Create(ctx, pod("enabled", "probe"), client.DryRunAll) != nil, nil
		}); err != nil {
		t.Fatalf("the webhook configuration never took effect: %v", err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := c.Create(ctx, tc.pod, client.DryRunAll)
			if tc.refused && (err == nil || !strings.Contains(err.Error(), "failed calling webhook")) {
				t.Errorf("created with the webhook down: %v; want refused", err)
			}
			if !tc.refused && err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
}
