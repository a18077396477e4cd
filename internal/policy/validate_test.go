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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/policy"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// found is one error as the test compares it: its field, its Ready reason
// and a piece of its message.
type found struct{ Field, Reason, Detail string }

func hook(url string) bindgatev1alpha1.PostBindWebhook {
	return bindgatev1alpha1.PostBindWebhook{Name: "h", Webhook: bindgatev1alpha1.Webhook{URL: url}}
}

func permitWith(conds ...bindgatev1alpha1.PermitCondition) *bindgatev1alpha1.Permit {
	return &bindgatev1alpha1.Permit{Conditions: conds}
}

func TestValidate(t *testing.T) {
	badSel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
	cases := map[string]struct {
		spec    bindgatev1alpha1.BindingPolicySpec
		allowLL bool
		want    []found
	}{
		"empty":                    {},
		"good postBind":            {spec: bindgatev1alpha1.BindingPolicySpec{PostBind: []bindgatev1alpha1.PostBindWebhook{hook("https://hooks.example/x")}}},
		"good expression":          {spec: bindgatev1alpha1.BindingPolicySpec{Permit: permitWith(bindgatev1alpha1.PermitCondition{Name: "c", Expression: `pod.metadata.name == 'a'`})}},
		"metadata allowed by flag": {spec: bindgatev1alpha1.BindingPolicySpec{PostBind: []bindgatev1alpha1.PostBindWebhook{hook("https://169.254.169.254/")}}, allowLL: true},
		"selector with an unknown operator": {
			spec: bindgatev1alpha1.BindingPolicySpec{PodSelector: badSel},
			want: []found{{"spec.podSelector.matchExpressions[0].operator", bindgatev1alpha1.ReasonInvalidSelector, `not a valid selector operator`}},
		},
		"expression that does not compile": {
			spec: bindgatev1alpha1.BindingPolicySpec{Permit: permitWith(
				bindgatev1alpha1.PermitCondition{Name: "ok", Expression: `true`},
				bindgatev1alpha1.PermitCondition{Name: "approved", Expression: `pod.metadata.name ==`})},
			want: []found{{"spec.permit.conditions[1].expression", bindgatev1alpha1.ReasonInvalidExpression, "condition approved: "}},
		},
		"metadata postBind": {
			spec: bindgatev1alpha1.BindingPolicySpec{PostBind: []bindgatev1alpha1.PostBindWebhook{hook("https://169.254.169.254/")}},
			want: []found{{"spec.postBind[0].url", bindgatev1alpha1.ReasonInvalidWebhook, "refusing to call link-local/metadata address 169.254.169.254"}},
		},
		"IPv6 metadata bind webhook": {
			spec: bindgatev1alpha1.BindingPolicySpec{Bind: &bindgatev1alpha1.Bind{Webhook: &bindgatev1alpha1.Webhook{URL: "https://[fd00:ec2::254]/"}}},
			want: []found{{"spec.bind.webhook.url", bindgatev1alpha1.ReasonInvalidWebhook, "forbidden webhook destination"}},
		},
		"metadata permit webhook": {
			spec: bindgatev1alpha1.BindingPolicySpec{Permit: permitWith(bindgatev1alpha1.PermitCondition{
				Name: "approver", Webhook: &bindgatev1alpha1.PermitWebhook{Webhook: bindgatev1alpha1.Webhook{URL: "https://169.254.169.254/permit"}},
			})},
			want: []found{{"spec.permit.conditions[0].webhook.url", bindgatev1alpha1.ReasonInvalidWebhook, "forbidden webhook destination"}},
		},
		"loopback postBind": {
			spec: bindgatev1alpha1.BindingPolicySpec{PostBind: []bindgatev1alpha1.PostBindWebhook{hook("https://127.0.0.1:9443/")}},
			want: []found{{"spec.postBind[0].url", bindgatev1alpha1.ReasonInvalidWebhook, "refusing to call loopback address 127.0.0.1"}},
		},
		"user info in the url, never repeated": {
			spec: bindgatev1alpha1.BindingPolicySpec{PostBind: []bindgatev1alpha1.PostBindWebhook{hook("https://user:pw@hooks.example/")}},
			want: []found{{"spec.postBind[0].url", bindgatev1alpha1.ReasonInvalidWebhook, "user info is not allowed"}},
		},
		"junk CA bundle": {
			spec: bindgatev1alpha1.BindingPolicySpec{PostBind: []bindgatev1alpha1.PostBindWebhook{{Name: "h",
				Webhook: bindgatev1alpha1.Webhook{URL: "https://hooks.example/", CABundle: []byte("junk")}}}},
			want: []found{{"spec.postBind[0].caBundle", bindgatev1alpha1.ReasonInvalidWebhook, "contains no valid PEM certificate"}},
		},
		"every error, the expression's first": {
			spec: bindgatev1alpha1.BindingPolicySpec{
				Permit:   permitWith(bindgatev1alpha1.PermitCondition{Name: "approved", Expression: `pod.spec.priority == 'high'`}),
				PostBind: []bindgatev1alpha1.PostBindWebhook{hook("https://127.0.0.1/")},
			},
			want: []found{
				{"spec.permit.conditions[0].expression", bindgatev1alpha1.ReasonInvalidExpression, "no matching overload"},
				{"spec.postBind[0].url", bindgatev1alpha1.ReasonInvalidWebhook, "loopback"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := policy.Validator{Destinations: webhookclient.Destinations{AllowLinkLocal: tc.allowLL}}
			errs := v.Validate(&bindgatev1alpha1.BindingPolicy{Spec: tc.spec})
			var got []found
			for i, e := range errs {
				f := found{e.Field, e.Origin, ""}
				if i < len(tc.want) && strings.Contains(e.Detail, tc.want[i].Detail) {
					f.Detail = tc.want[i].Detail
				} else {
					f.Detail = e.Detail
				}
				got = append(got, f)
				if strings.Contains(e.Error(), "pw@") {
					t.Errorf("error repeats the URL's credentials: %v", e)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			wantReason := bindgatev1alpha1.ReasonValid
			if len(tc.want) > 0 {
				wantReason = tc.want[0].Reason
			}
			if r := policy.Reason(errs); r != wantReason {
				t.Errorf("Reason = %s, want %s", r, wantReason)
			}
		})
	}
}

// TestValidateUpdate: a part of the spec an update leaves as it was is not
// checked again; a part it changes is.
func TestValidateUpdate(t *testing.T) {
	bad := bindgatev1alpha1.BindingPolicySpec{Permit: permitWith(bindgatev1alpha1.PermitCondition{Name: "c", Expression: `pod.metadata.name ==`})}
	withHook := *bad.DeepCopy()
	withHook.PostBind = []bindgatev1alpha1.PostBindWebhook{hook("https://127.0.0.1/")}
	cases := map[string]struct {
		old, new bindgatev1alpha1.BindingPolicySpec
		want     []string
	}{
		"unchanged invalid permit":          {old: bad, new: bad},
		"priority changed":                  {old: bad, new: func() bindgatev1alpha1.BindingPolicySpec { s := *bad.DeepCopy(); s.Priority = 5; return s }()},
		"a bad hook added beside it":        {old: bad, new: withHook, want: []string{"spec.postBind[0].url"}},
		"the permit changed, still invalid": {old: withHook, new: bindgatev1alpha1.BindingPolicySpec{Permit: permitWith(bindgatev1alpha1.PermitCondition{Name: "c", Expression: `pod.metadata.name`}), PostBind: withHook.PostBind}, want: []string{"spec.permit.conditions[0].expression"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, e := range (policy.Validator{}).ValidateUpdate(&bindgatev1alpha1.BindingPolicy{Spec: tc.new}, &bindgatev1alpha1.BindingPolicy{Spec: tc.old}) {
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}
