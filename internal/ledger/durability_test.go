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

package ledger

import (
	"testing"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

func TestMustRecord(t *testing.T) {
	policy := func(mut ...func(*bindgatev1alpha1.BindingPolicy)) *bindgatev1alpha1.BindingPolicy {
		p := &bindgatev1alpha1.BindingPolicy{}
		for _, m := range mut {
			m(p)
		}
		return p
	}
	cases := map[string]struct {
		all    bool
		policy *bindgatev1alpha1.BindingPolicy
		want   bool
	}{
		"plain policy binds from memory": {policy: policy(), want: false},
		"several replicas record all":    {all: true, policy: policy(), want: true},
		"permit conditions": {policy: policy(func(p *bindgatev1alpha1.BindingPolicy) {
			p.Spec.Permit = &bindgatev1alpha1.Permit{Conditions: []bindgatev1alpha1.PermitCondition{{Name: "c"}}}
		}), want: true},
		"only a gang condition: placed whole, never waits": {policy: policy(func(p *bindgatev1alpha1.BindingPolicy) {
			p.Spec.Permit = &bindgatev1alpha1.Permit{Conditions: []bindgatev1alpha1.PermitCondition{{Name: "g", Gang: &bindgatev1alpha1.GangCondition{MinMember: 2}}}}
		}), want: false},
		"a gang and an expression": {policy: policy(func(p *bindgatev1alpha1.BindingPolicy) {
			p.Spec.Permit = &bindgatev1alpha1.Permit{Conditions: []bindgatev1alpha1.PermitCondition{
				{Name: "g", Gang: &bindgatev1alpha1.GangCondition{MinMember: 2}}, {Name: "e", Expression: "true"}}}
		}), want: true},
		"permit without conditions": {policy: policy(func(p *bindgatev1alpha1.BindingPolicy) {
			p.Spec.Permit = &bindgatev1alpha1.Permit{}
		}), want: false},
		"bind webhook": {policy: policy(func(p *bindgatev1alpha1.BindingPolicy) {
			p.Spec.Bind = &bindgatev1alpha1.Bind{Webhook: &bindgatev1alpha1.Webhook{}}
		}), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := (Durability{All: tc.all}).MustRecord(tc.policy); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
