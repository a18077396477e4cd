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

package policy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/admission/policy"
)

func raw(t *testing.T, expr string) runtime.RawExtension {
	t.Helper()
	p := &bindgatev1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: bindgatev1alpha1.BindingPolicySpec{Permit: &bindgatev1alpha1.Permit{
			Conditions: []bindgatev1alpha1.PermitCondition{{Name: "approved", Expression: expr}},
		}},
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

func TestValidator(t *testing.T) {
	const good, bad = `pod.metadata.name == 'a'`, `pod.metadata.name ==`
	cases := []struct {
		name      string
		op        admissionv1.Operation
		obj, old  string
		wantAllow bool
	}{
		{"create valid", admissionv1.Create, good, "", true},
		{"create invalid", admissionv1.Create, bad, "", false},
		{"update to invalid", admissionv1.Update, bad, good, false},
		{"update leaving an invalid permit unchanged", admissionv1.Update, bad, bad, true},
		{"delete", admissionv1.Delete, bad, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: tc.op, Object: raw(t, tc.obj)}}
			if tc.old != "" {
				req.OldObject = raw(t, tc.old)
			}
			resp := policy.Handler{}.Handle(context.Background(), req)
			if resp.Allowed != tc.wantAllow {
				t.Fatalf("allowed = %v, want %v (%v)", resp.Allowed, tc.wantAllow, resp.Result)
			}
			if !tc.wantAllow && !strings.Contains(resp.Result.Message, "spec.permit.conditions[0].expression") {
				t.Fatalf("message %q does not name the condition", resp.Result.Message)
			}
		})
	}
}
