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

package permit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/permit"
	"github.com/bindgate/bindgate/internal/policy"
)

const approved = `has(pod.metadata.annotations) && pod.metadata.annotations[?'scheduling.bindgate.dev/approved'].orValue('') == 'true'`

func policyWith(exprs ...string) *bindgatev1alpha1.BindingPolicy {
	p := &bindgatev1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "uid-p", Generation: 1},
		Spec:       bindgatev1alpha1.BindingPolicySpec{Permit: &bindgatev1alpha1.Permit{}},
	}
	for i, e := range exprs {
		p.Spec.Permit.Conditions = append(p.Spec.Permit.Conditions, bindgatev1alpha1.PermitCondition{
			Name: []string{"first", "second", "third"}[i], Expression: e,
		})
	}
	return p
}

// TestCompile: expressions as the policy validator checks them.
func TestCompile(t *testing.T) {
	cases := []struct {
		name    string
		exprs   []string
		wantErr string // substring; empty: no error
	}{
		{"good", []string{approved}, ""},
		{"node and policy", []string{`node.metadata.labels['zone'] == 'a' && policy.metadata.name == 'p'`}, ""},
		{"k8s library", []string{`quantity(node.status.allocatable['cpu']).isGreaterThan(quantity('1'))`}, ""},
		{"not bool", []string{`'yes'`}, "condition first: the expression must evaluate to a bool"},
		{"not bool: a field", []string{`pod.spec.nodeName`}, "the expression must evaluate to a bool, not string"},
		{"int compared with string", []string{`pod.spec.priority == 'high'`}, "found no matching overload for '_==_' applied to '(int, string)'"},
		{"unknown field", []string{`pod.spec.nodeNam == ''`}, "undefined field 'nodeNam'"},
		{"unknown node field", []string{`node.spec.unschedulabl`}, "undefined field 'unschedulabl'"},
		{"unknown policy field", []string{`policy.spec.priorty > 1`}, "undefined field 'priorty'"},
		{"optional field with has", []string{`!has(pod.spec.nodeName) || pod.spec.nodeName == ''`}, ""},
		{"optional field with ?.", []string{`pod.spec.?priorityClassName.orValue('') == 'high'`}, ""},
		{"typed policy", []string{`policy.spec.priority > 1 && policy.metadata.labels['team'] == 'a'`}, ""},
		{"timestamp", []string{`pod.metadata.creationTimestamp < timestamp('2030-01-01T00:00:00Z')`}, ""},
		{"quantity", []string{`pod.spec.containers.all(c, !has(c.resources.requests) || !('cpu' in c.resources.requests) || quantity(c.resources.requests['cpu']).isLessThan(quantity('4')))`}, ""},
		{"list over containers", []string{`pod.spec.containers.all(c, c.image.startsWith('registry.example/'))`}, ""},
		{"node conditions", []string{`node.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')`}, ""},
		{"labels", []string{`pod.metadata.labels.exists(k, k.startsWith('team-'))`}, ""},
		{"cost: a list inside a list", []string{`pod.spec.containers.all(c, !has(c.env) || c.env.all(e, e.name != 'DEBUG'))`}, ""},
		{"cost: a regex per image", []string{`pod.spec.containers.all(c, c.image.matches('^registry\\.example/[a-z]+:v[0-9]+$'))`}, ""},
		{"cost: images against node images", []string{`pod.spec.containers.exists(c, c.image in node.status.images.map(i, i.names[0]))`}, ""},
		{"cost: every pair of containers", []string{approved, `pod.spec.containers.all(c, pod.spec.containers.all(d, c.name == d.name || c.image != d.image))`}, "condition second: estimated worst-case cost 6.92e+17 exceeds the limit 1e+15 by a factor of 692"},
		{"cost: a list joined into a string", []string{`pod.spec.containers.map(c, c.image).join(',').size() < 100`}, "condition first: estimated worst-case cost 1.84e+18 exceeds the limit 1e+15"},
		{"syntax error", []string{approved, `pod.metadata.name ==`}, "condition second: "},
		{"unknown variable", []string{`object.metadata.name == 'x'`}, "undeclared reference to 'object'"},
		{"no permit", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := policy.Validator{}.Validate(policyWith(tc.exprs...)).ToAggregate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestEval(t *testing.T) {
	pod := func(ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", Annotations: ann}}
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}},
		Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}},
	}
	prio := int32(10)
	typed := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
		Spec:       corev1.PodSpec{Priority: &prio, Containers: []corev1.Container{{Name: "c", Image: "registry.example/app"}}},
	}
	cases := []struct {
		name       string
		expr       string
		pod        *corev1.Pod
		wantWait   bool
		wantReason string
	}{
		{"true", approved, pod(map[string]string{"scheduling.bindgate.dev/approved": "true"}), false, ""},
		{"false: other value", approved, pod(map[string]string{"scheduling.bindgate.dev/approved": "no"}), true, permit.ReasonFalse},
		{"false: no annotations", approved, pod(nil), true, permit.ReasonFalse},
		{"node label", `node.metadata.labels.zone == 'a'`, pod(nil), false, ""},
		{"runtime error", `pod.metadata.annotations['missing'] == 'x'`, pod(nil), true, "evaluation error: no such key: annotations"},
		{"invalid expression", `pod.metadata.name ==`, pod(nil), true, "invalid expression"},
		{"int field", `pod.spec.priority > 5`, typed, false, ""},
		{"timestamp field", `pod.metadata.creationTimestamp < timestamp('2026-06-01T00:00:00Z')`, typed, false, ""},
		{"quantity field", `quantity(node.status.allocatable['cpu']).isGreaterThan(quantity('4'))`, typed, false, ""},
		{"list field", `pod.spec.containers.all(c, c.image.startsWith('registry.example/'))`, typed, false, ""},
		{"unset optional field", `pod.spec.?priorityClassName.orValue('') == 'high'`, typed, true, permit.ReasonFalse},
		{"unset field without has", `pod.spec.nodeName == ''`, typed, true, "evaluation error: no such key: nodeName"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := permit.NewExpression("c", tc.expr)
			st, after := p.Permit(context.Background(), &framework.CycleState{Policy: policyWith(tc.expr)}, tc.pod, node)
			if !tc.wantWait {
				if !st.IsSuccess() {
					t.Fatalf("status = %v, want success", st)
				}
				return
			}
			if !st.IsWait() {
				t.Fatalf("status = %v, want wait", st)
			}
			if !strings.Contains(st.Message(), tc.wantReason) {
				t.Fatalf("reason = %q, want it to contain %q", st.Message(), tc.wantReason)
			}
			if after <= 0 || after > permit.RecheckAfter {
				t.Fatalf("wait = %v, want (0, %v]", after, permit.RecheckAfter)
			}
		})
	}
}

func TestCostLimit(t *testing.T) {
	// A cross product over a long list exceeds the runtime cost limit.
	expr := `[` + strings.Repeat("1,", 2000) + `1].all(x, [` + strings.Repeat("1,", 2000) + `1].all(y, x == y))`
	if err := permit.CheckExpression(expr); err != nil {
		t.Fatalf("compile: %v", err)
	}
	st, _ := permit.NewExpression("c", expr).Permit(context.Background(), &framework.CycleState{Policy: policyWith(expr)}, &corev1.Pod{}, &corev1.Node{})
	if !st.IsWait() || !strings.Contains(st.Message(), "cost") {
		t.Fatalf("status = %v, want a wait naming the cost limit", st)
	}
}

func TestPluginsForCachesPerGeneration(t *testing.T) {
	p := policyWith(approved, `true`)
	p.Spec.Permit.Conditions = append(p.Spec.Permit.Conditions, bindgatev1alpha1.PermitCondition{
		Name: "gang", Gang: &bindgatev1alpha1.GangCondition{MinMember: 2},
	})
	a := permit.PluginsFor(p)
	if len(a) != 3 || a[0].Name() != "first" || a[1].Name() != "second" || a[2].Name() != "gang" {
		t.Fatalf("plugins = %v", a)
	}
	if b := permit.PluginsFor(p); b[0] != a[0] {
		t.Fatal("same generation compiled twice")
	}
	p.Generation++
	if b := permit.PluginsFor(p); b[0] == a[0] {
		t.Fatal("new generation not recompiled")
	}
}
