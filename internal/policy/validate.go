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

package policy

import (
	"crypto/x509"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/permit"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// Validator checks what the CRD schema cannot: label selectors parse,
// permit expressions compile within the cost limit, and every outbound
// webhook (permit, bind, PostBind) names an address the operator may call,
// with a usable CA bundle. The admission webhook refuses a policy that
// fails; the policy reconciler reports the same errors in Ready=False (for
// policies admitted while the webhook was absent, or before a flag changed
// what is allowed).
type Validator struct {
	// Destinations are the addresses webhooks may reach.
	Destinations webhookclient.Destinations
}

// Validate returns every error of p, each naming its field; each error's
// Origin is the Ready condition reason it stands for (see Reason).
func (v Validator) Validate(p *bindgatev1alpha1.BindingPolicy) field.ErrorList {
	return v.ValidateUpdate(p, nil)
}

// ValidateUpdate is Validate for an update from old (nil on create): a
// part of the spec the update leaves unchanged is not checked again, so
// that labels, finalizers and other fields of a policy admitted under
// other rules can still change.
func (v Validator) ValidateUpdate(p, old *bindgatev1alpha1.BindingPolicy) field.ErrorList {
	s, spec := &p.Spec, field.NewPath("spec")
	changed := func(get func(*bindgatev1alpha1.BindingPolicySpec) any) bool {
		return old == nil || !apiequality.Semantic.DeepEqual(get(s), get(&old.Spec))
	}
	var errs field.ErrorList
	for _, sel := range []struct {
		name string
		get  func(*bindgatev1alpha1.BindingPolicySpec) any
	}{
		{"namespaceSelector", func(s *bindgatev1alpha1.BindingPolicySpec) any { return s.NamespaceSelector }},
		{"podSelector", func(s *bindgatev1alpha1.BindingPolicySpec) any { return s.PodSelector }},
		{"nodeSelector", func(s *bindgatev1alpha1.BindingPolicySpec) any { return s.NodeSelector }},
	} {
		if changed(sel.get) {
			errs = append(errs, selector(sel.get(s).(*metav1.LabelSelector), spec.Child(sel.name))...)
		}
	}
	if s.Permit != nil && changed(func(s *bindgatev1alpha1.BindingPolicySpec) any { return s.Permit }) {
		conds := spec.Child("permit", "conditions")
		for i := range s.Permit.Conditions {
			if c := &s.Permit.Conditions[i]; c.Expression != "" {
				if err := permit.CheckExpression(c.Expression); err != nil {
					errs = append(errs, origin(field.Invalid(conds.Index(i).Child("expression"), c.Expression,
						"condition "+c.Name+": "+err.Error()), bindgatev1alpha1.ReasonInvalidExpression))
				}
			}
		}
		for i := range s.Permit.Conditions {
			if c := &s.Permit.Conditions[i]; c.Webhook != nil {
				errs = append(errs, v.webhook(&c.Webhook.Webhook, conds.Index(i).Child("webhook"))...)
			}
		}
	}
	if s.Bind != nil && s.Bind.Webhook != nil && changed(func(s *bindgatev1alpha1.BindingPolicySpec) any { return s.Bind }) {
		errs = append(errs, v.webhook(s.Bind.Webhook, spec.Child("bind", "webhook"))...)
	}
	if changed(func(s *bindgatev1alpha1.BindingPolicySpec) any { return s.PostBind }) {
		for i := range s.PostBind {
			errs = append(errs, v.webhook(&s.PostBind[i].Webhook, spec.Child("postBind").Index(i))...)
		}
	}
	return errs
}

// Reason is the Ready condition reason of errs from Validate: that of the
// first error (ReasonValid when there is none).
func Reason(errs field.ErrorList) string {
	if len(errs) == 0 {
		return bindgatev1alpha1.ReasonValid
	}
	return errs[0].Origin
}

// origin sets err's Origin to the Ready reason it stands for.
func origin(err *field.Error, reason string) *field.Error {
	err.Origin = reason
	return err
}

// selector checks that sel parses.
func selector(sel *metav1.LabelSelector, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path)
	if len(errs) == 0 {
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(path, sel, err.Error()))
		}
	}
	for _, e := range errs {
		e.Origin = bindgatev1alpha1.ReasonInvalidSelector
	}
	return errs
}

// webhook checks an outbound webhook's address (webhookclient.ValidateURL:
// https, a host, no user info, no literal address the destinations refuse)
// and CA bundle.
func (v Validator) webhook(wh *bindgatev1alpha1.Webhook, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if err := webhookclient.ValidateURL(webhookclient.URLOf(wh), v.Destinations); err != nil {
		// The URL is not repeated: it may hold credentials (the error
		// shows it redacted where it matters).
		p := path.Child("url")
		if wh.Service != nil {
			p = path.Child("service")
		}
		errs = append(errs, origin(field.Invalid(p, field.OmitValueType{}, err.Error()), bindgatev1alpha1.ReasonInvalidWebhook))
	}
	if len(wh.CABundle) > 0 && !x509.NewCertPool().AppendCertsFromPEM(wh.CABundle) {
		errs = append(errs, origin(field.Invalid(path.Child("caBundle"), field.OmitValueType{}, "contains no valid PEM certificate"),
			bindgatev1alpha1.ReasonInvalidWebhook))
	}
	return errs
}
