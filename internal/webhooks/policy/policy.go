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
// refuses a policy whose permit expressions do not compile, with a message
// naming the condition ("spec.permit.conditions[0] (approved): ..."). The
// policy controller checks the same at runtime (Ready=False,
// InvalidExpression) for policies admitted while the webhook was absent.
//
// failurePolicy is Fail: a policy is cluster configuration written rarely,
// and an unchecked expression would only stall its pods later.
package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/permit"
)

// Path is where the webhook server serves the handler. It must match the
// path in the +kubebuilder:webhook marker below.
const Path = "/validate-scheduling-bindgate-dev-v1alpha1-bindingpolicy"

// +kubebuilder:webhook:path=/validate-scheduling-bindgate-dev-v1alpha1-bindingpolicy,mutating=false,failurePolicy=fail,sideEffects=None,groups=scheduling.bindgate.dev,resources=bindingpolicies,verbs=create;update,versions=v1alpha1,name=vbindingpolicy.scheduling.bindgate.dev,admissionReviewVersions=v1,timeoutSeconds=5

// Validator refuses BindingPolicies whose permit expressions do not compile.
type Validator struct{}

var _ admission.Handler = Validator{}

// Handle checks a created or updated policy. An update that leaves
// spec.permit unchanged is allowed even when it does not compile, so that
// labels, finalizers and other fields of an old policy can still change.
func (Validator) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	p := &bindgatev1alpha1.BindingPolicy{}
	if err := json.Unmarshal(req.Object.Raw, p); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the BindingPolicy: %w", err))
	}
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		old := &bindgatev1alpha1.BindingPolicy{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err == nil && apiequality.Semantic.DeepEqual(old.Spec.Permit, p.Spec.Permit) {
			return admission.Allowed("spec.permit unchanged")
		}
	}
	if err := permit.Compile(p); err != nil {
		return admission.Denied(fmt.Sprintf("invalid permit expression: %v", err))
	}
	return admission.Allowed("")
}

// Setup registers the handler at Path on the manager's webhook server. The
// first call to mgr.GetWebhookServer adds the server to the manager, so call
// Setup only once the serving certificate is in place (see
// internal/webhooks/certs).
func Setup(mgr ctrl.Manager) error {
	mgr.GetWebhookServer().Register(Path, &webhook.Admission{Handler: Validator{}})
	return nil
}
