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

// Package policy is the validating admission webhook for BindingPolicy: it
// refuses a policy that internal/policy's Validator refuses (selectors,
// permit expressions, outbound webhook addresses and CA bundles), with a
// field.ErrorList that names each field. The policy reconciler reports the
// same errors in Ready=False for policies admitted while the webhook was
// absent.
//
// failurePolicy is Fail: a policy is cluster configuration written rarely,
// and an unchecked policy would only stall its pods later.
package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/policy"
)

// Path is where the webhook server serves the handler. It must match the
// path in the +kubebuilder:webhook marker below.
const Path = "/validate-scheduling-bindgate-dev-v1alpha1-bindingpolicy"

// +kubebuilder:webhook:path=/validate-scheduling-bindgate-dev-v1alpha1-bindingpolicy,mutating=false,failurePolicy=fail,sideEffects=None,groups=scheduling.bindgate.dev,resources=bindingpolicies,verbs=create;update,versions=v1alpha1,name=vbindingpolicy.scheduling.bindgate.dev,admissionReviewVersions=v1,timeoutSeconds=5

// Handler refuses BindingPolicies the Validator refuses.
type Handler struct {
	Validator policy.Validator
}

var _ admission.Handler = Handler{}

// Handle checks a created or updated policy. An update is checked only in
// the parts of the spec it changes, so that labels, finalizers and other
// fields of an old policy can still change.
func (h Handler) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	p := &bindgatev1alpha1.BindingPolicy{}
	if err := json.Unmarshal(req.Object.Raw, p); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the BindingPolicy: %w", err))
	}
	var old *bindgatev1alpha1.BindingPolicy
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		old = &bindgatev1alpha1.BindingPolicy{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			old = nil // check everything
		}
	}
	if errs := h.Validator.ValidateUpdate(p, old); len(errs) > 0 {
		st := apierrors.NewInvalid(bindgatev1alpha1.GroupVersion.WithKind("BindingPolicy").GroupKind(), p.Name, errs).Status()
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &st}}
	}
	return admission.Allowed("")
}

// Setup registers the handler at Path on the manager's webhook server. The
// first call to mgr.GetWebhookServer adds the server to the manager, so call
// Setup only once the serving certificate is in place (see
// internal/admission/certs).
func Setup(mgr ctrl.Manager, v policy.Validator) error {
	mgr.GetWebhookServer().Register(Path, &webhook.Admission{Handler: Handler{Validator: v}})
	return nil
}
