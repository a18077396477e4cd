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

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/policy"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// BindingPolicyReconciler keeps each policy's Ready condition,
// observedGeneration, boundPods and used current. It never writes the spec,
// so GitOps tools see no drift.
type BindingPolicyReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Validator checks a policy beyond what the CRD schema can, as the
	// admission webhook does; Ready carries its errors.
	Validator policy.Validator
	// Secrets, when set, reads the Secrets that webhooks' signingSecretRef
	// name, in SecretNamespace: a policy whose Secret or key is missing is
	// not Ready.
	Secrets         webhookclient.SecretGetter
	SecretNamespace string

	// pods is the pod informer's index of the pods each policy bound.
	pods toolscache.Indexer
}

// Re-check intervals of policies that name Secrets (no Secret is watched:
// the operator reads them only by name). Variables for tests.
var (
	secretMissingRecheck = 30 * time.Second
	secretPresentRecheck = 5 * time.Minute
)

// +kubebuilder:rbac:groups=scheduling.bindgate.dev,resources=bindingpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.bindgate.dev,resources=bindingpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile sets the Ready condition of one policy.
func (r *BindingPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)

	pol := &bindgatev1alpha1.BindingPolicy{}
	if err := r.Get(ctx, req.NamespacedName, pol); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	ready := metav1.Condition{
		Type:               bindgatev1alpha1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             bindgatev1alpha1.ReasonValid,
		Message:            "The policy is valid and in use",
		ObservedGeneration: pol.Generation,
	}
	if pol.Spec.Mode == bindgatev1alpha1.ModeDryRun {
		ready.Message = "The policy is valid; in DryRun mode it takes no pod and records what it would do in status.dryRun"
	}
	var result ctrl.Result
	if errs := r.Validator.Validate(pol); len(errs) > 0 {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, policy.Reason(errs), errs.ToAggregate().Error()
	} else if r.Secrets != nil && policy.HasSecrets(pol) {
		result.RequeueAfter = secretPresentRecheck
		if msg := policy.MissingSecret(ctx, r.Secrets, r.SecretNamespace, pol); msg != "" {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, bindgatev1alpha1.ReasonMissingSecret, msg
			result.RequeueAfter = secretMissingRecheck
		}
	}

	bound, used, err := policy.Usage(r.pods, pol)
	if err != nil {
		return ctrl.Result{}, err
	}
	gangs, err := policy.Gangs(ctx, r.pods, r.Client, pol)
	if err != nil {
		return ctrl.Result{}, err
	}

	// A policy switched to Enforce starts afresh: what it would have done
	// in DryRun mode no longer applies.
	staleDryRun := pol.Status.DryRun != nil && pol.Spec.Mode != bindgatev1alpha1.ModeDryRun
	if pol.Status.ObservedGeneration == pol.Generation && !staleDryRun &&
		pol.Status.BoundPods == bound && apiequality.Semantic.DeepEqual(pol.Status.Used, used) &&
		apiequality.Semantic.DeepEqual(pol.Status.Gangs, gangs) {
		if cur := meta.FindStatusCondition(pol.Status.Conditions, ready.Type); cur != nil &&
			cur.Status == ready.Status && cur.Reason == ready.Reason && cur.Message == ready.Message &&
			cur.ObservedGeneration == ready.ObservedGeneration {
			return result, nil
		}
	}

	patch := client.MergeFromWithOptions(pol.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pol.Status.ObservedGeneration = pol.Generation
	pol.Status.BoundPods = bound
	pol.Status.Used = used
	pol.Status.Gangs = gangs
	if staleDryRun {
		pol.Status.DryRun = nil
	}
	meta.SetStatusCondition(&pol.Status.Conditions, ready)
	if err := r.Status().Patch(ctx, pol, patch); err != nil {
		if apierrors.IsConflict(err) {
			// The ledger wrote reservations meanwhile; try again on fresh data.
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
		return ctrl.Result{}, fmt.Errorf("patching the status of BindingPolicy %s: %w", pol.Name, err)
	}
	log.V(4).Info("Updated policy status", "ready", ready.Status, "reason", ready.Reason)
	return result, nil
}

// usageDelay batches the status writes that bound pods cause: a burst of
// binds updates a policy's counts once.
const usageDelay = 2 * time.Second

// SetupWithManager registers the reconciler; status-only updates do not
// trigger it. Pods it bound that start or stop counting against a policy
// requeue that policy after usageDelay.
func (r *BindingPolicyReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	index, err := policy.IndexBound(ctx, mgr.GetCache())
	if err != nil {
		return err
	}
	r.pods = index
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], name string) {
		if name != "" {
			q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}, usageDelay)
		}
	}
	pods := handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, policy.BoundTo(e.Object.(*corev1.Pod)))
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if before, after := policy.BoundTo(e.ObjectOld.(*corev1.Pod)), policy.BoundTo(e.ObjectNew.(*corev1.Pod)); before != after {
				enqueue(q, before)
				enqueue(q, after)
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if pod, ok := e.Object.(*corev1.Pod); ok {
				enqueue(q, policy.BoundTo(pod))
			}
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&bindgatev1alpha1.BindingPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Pod{}, pods).
		Named("bindingpolicy").
		Complete(r)
}
