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

package controllers

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// BindingPolicyReconciler keeps each policy's Ready condition and
// observedGeneration current. It never writes the spec, so GitOps tools see
// no drift.
type BindingPolicyReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Validate checks a policy beyond what the CRD schema can; nil accepts
	// everything the schema accepted.
	Validate func(*bindgatev1alpha1.BindingPolicy) (reason, message string, ok bool)
}

// +kubebuilder:rbac:groups=scheduling.bindgate.dev,resources=bindingpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.bindgate.dev,resources=bindingpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile sets the Ready condition of one policy.
func (r *BindingPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)

	policy := &bindgatev1alpha1.BindingPolicy{}
	if err := r.Get(ctx, req.NamespacedName, policy); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	ready := metav1.Condition{
		Type:               bindgatev1alpha1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             bindgatev1alpha1.ReasonValid,
		Message:            "The policy is valid and in use",
		ObservedGeneration: policy.Generation,
	}
	if reason, message, ok := r.validate(policy); !ok {
		ready.Status = metav1.ConditionFalse
		ready.Reason = reason
		ready.Message = message
	}

	if policy.Status.ObservedGeneration == policy.Generation {
		if cur := meta.FindStatusCondition(policy.Status.Conditions, ready.Type); cur != nil &&
			cur.Status == ready.Status && cur.Reason == ready.Reason && cur.Message == ready.Message &&
			cur.ObservedGeneration == ready.ObservedGeneration {
			return ctrl.Result{}, nil
		}
	}

	patch := client.MergeFromWithOptions(policy.DeepCopy(), client.MergeFromWithOptimisticLock{})
	policy.Status.ObservedGeneration = policy.Generation
	meta.SetStatusCondition(&policy.Status.Conditions, ready)
	if err := r.Status().Patch(ctx, policy, patch); err != nil {
		if apierrors.IsConflict(err) {
			// The ledger wrote reservations meanwhile; try again on fresh data.
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
		return ctrl.Result{}, fmt.Errorf("patching the status of BindingPolicy %s: %w", policy.Name, err)
	}
	log.V(4).Info("Updated policy status", "ready", ready.Status, "reason", ready.Reason)
	return ctrl.Result{}, nil
}

func (r *BindingPolicyReconciler) validate(p *bindgatev1alpha1.BindingPolicy) (string, string, bool) {
	for field, sel := range map[string]*metav1.LabelSelector{
		"spec.namespaceSelector": p.Spec.NamespaceSelector,
		"spec.podSelector":       p.Spec.PodSelector,
		"spec.nodeSelector":      p.Spec.NodeSelector,
	} {
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			return bindgatev1alpha1.ReasonInvalidSelector, fmt.Sprintf("%s: %v", field, err), false
		}
	}
	if r.Validate != nil {
		return r.Validate(p)
	}
	return "", "", true
}

// SetupWithManager registers the reconciler; status-only updates do not
// trigger it.
func (r *BindingPolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&bindgatev1alpha1.BindingPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("bindingpolicy").
		Complete(r)
}
