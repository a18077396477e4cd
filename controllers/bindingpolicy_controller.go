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
	resourcehelper "k8s.io/component-helpers/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// BindingPolicyReconciler keeps each policy's Ready condition,
// observedGeneration, boundPods and used current. It never writes the spec, so GitOps tools see
// no drift.
type BindingPolicyReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Validate checks a policy beyond what the CRD schema can; nil accepts
	// everything the schema accepted.
	Validate func(*bindgatev1alpha1.BindingPolicy) (reason, message string, ok bool)
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
	if policy.Spec.Mode == bindgatev1alpha1.ModeDryRun {
		ready.Message = "The policy is valid; in DryRun mode it takes no pod and records what it would do in status.dryRun"
	}
	var result ctrl.Result
	if reason, message, ok := r.validate(policy); !ok {
		ready.Status = metav1.ConditionFalse
		ready.Reason = reason
		ready.Message = message
	} else if refs := secretRefs(policy); len(refs) > 0 && r.Secrets != nil {
		result.RequeueAfter = secretPresentRecheck
		if msg := r.missingSecret(ctx, refs); msg != "" {
			ready.Status = metav1.ConditionFalse
			ready.Reason = bindgatev1alpha1.ReasonMissingSecret
			ready.Message = msg
			result.RequeueAfter = secretMissingRecheck
		}
	}

	bound, used, err := r.usage(ctx, policy)
	if err != nil {
		return ctrl.Result{}, err
	}

	// A policy switched to Enforce starts afresh: what it would have done
	// in DryRun mode no longer applies.
	staleDryRun := policy.Status.DryRun != nil && policy.Spec.Mode != bindgatev1alpha1.ModeDryRun
	if policy.Status.ObservedGeneration == policy.Generation && !staleDryRun &&
		policy.Status.BoundPods == bound && apiequality.Semantic.DeepEqual(policy.Status.Used, used) {
		if cur := meta.FindStatusCondition(policy.Status.Conditions, ready.Type); cur != nil &&
			cur.Status == ready.Status && cur.Reason == ready.Reason && cur.Message == ready.Message &&
			cur.ObservedGeneration == ready.ObservedGeneration {
			return result, nil
		}
	}

	patch := client.MergeFromWithOptions(policy.DeepCopy(), client.MergeFromWithOptimisticLock{})
	policy.Status.ObservedGeneration = policy.Generation
	policy.Status.BoundPods = bound
	policy.Status.Used = used
	if staleDryRun {
		policy.Status.DryRun = nil
	}
	meta.SetStatusCondition(&policy.Status.Conditions, ready)
	if err := r.Status().Patch(ctx, policy, patch); err != nil {
		if apierrors.IsConflict(err) {
			// The ledger wrote reservations meanwhile; try again on fresh data.
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
		return ctrl.Result{}, fmt.Errorf("patching the status of BindingPolicy %s: %w", policy.Name, err)
	}
	log.V(4).Info("Updated policy status", "ready", ready.Status, "reason", ready.Reason)
	return result, nil
}

// secretRef is one signingSecretRef and the field that holds it.
type secretRef struct {
	field string
	ref   *bindgatev1alpha1.SecretKeyRef
}

func secretRefs(p *bindgatev1alpha1.BindingPolicy) []secretRef {
	var refs []secretRef
	add := func(field string, wh *bindgatev1alpha1.Webhook) {
		if wh != nil && wh.SigningSecretRef != nil {
			refs = append(refs, secretRef{field: field, ref: wh.SigningSecretRef})
		}
	}
	if p.Spec.Bind != nil {
		add("spec.bind.webhook", p.Spec.Bind.Webhook)
	}
	if p.Spec.Permit != nil {
		for i := range p.Spec.Permit.Conditions {
			if c := &p.Spec.Permit.Conditions[i]; c.Webhook != nil {
				add(fmt.Sprintf("spec.permit.conditions[%d] (%s)", i, c.Name), &c.Webhook.Webhook)
			}
		}
	}
	for i := range p.Spec.PostBind {
		h := &p.Spec.PostBind[i]
		add(fmt.Sprintf("spec.postBind[%d] (%s)", i, h.Name), &h.Webhook)
	}
	return refs
}

// missingSecret names the first signingSecretRef whose Secret or key cannot
// be read ("" when all can).
func (r *BindingPolicyReconciler) missingSecret(ctx context.Context, refs []secretRef) string {
	for _, s := range refs {
		_, err := r.Secrets.GetSecretKey(ctx, r.SecretNamespace, s.ref.Name, s.ref.Key)
		switch {
		case err == nil:
			continue
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("%s: signingSecretRef: Secret %s/%s not found", s.field, r.SecretNamespace, s.ref.Name)
		default:
			return fmt.Sprintf("%s: signingSecretRef: Secret %s/%s, key %s: %v", s.field, r.SecretNamespace, s.ref.Name, s.ref.Key, err)
		}
	}
	return ""
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

// boundPolicyIndex indexes the pods in the informer cache that count
// against a policy: bound by it and not terminated.
const boundPolicyIndex = "bindgate.boundPolicy"

func boundPolicyOf(pod *corev1.Pod) string {
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return ""
	}
	policy, _ := bind.BoundBy(pod) // never a policy the pod's owner named
	return policy
}

// usage counts the policy's bound, non-terminated pods and what it uses:
// their requests plus its recorded reservations of pods not yet seen bound,
// for cpu, memory and the resources its capacity lists.
func (r *BindingPolicyReconciler) usage(ctx context.Context, p *bindgatev1alpha1.BindingPolicy) (int32, corev1.ResourceList, error) {
	// The informer's own index: its pods as they are, no list copied (a
	// list of every bound pod every few seconds was most of the operator's
	// garbage at 10000 pods).
	objs, err := r.pods.ByIndex(boundPolicyIndex, p.Name)
	if err != nil {
		return 0, nil, fmt.Errorf("listing the pods of BindingPolicy %s: %w", p.Name, err)
	}
	used := corev1.ResourceList{}
	add := func(l corev1.ResourceList) {
		for name, q := range l {
			if _, capped := p.Spec.Capacity[name]; !capped && name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				continue
			}
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	bound := make(map[types.UID]bool, len(objs))
	for _, o := range objs {
		pod, ok := o.(*corev1.Pod)
		if !ok {
			continue
		}
		bound[pod.UID] = true
		add(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	}
	for _, res := range p.Status.Reservations {
		if !bound[res.PodUID] {
			add(res.Resources)
		}
	}
	if len(used) == 0 {
		used = nil
	}
	return int32(len(bound)), used, nil
}

// usageDelay batches the status writes that bound pods cause: a burst of
// binds updates a policy's counts once.
const usageDelay = 2 * time.Second

// SetupWithManager registers the reconciler; status-only updates do not
// trigger it. Pods it bound that start or stop counting against a policy
// requeue that policy after usageDelay.
func (r *BindingPolicyReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	informer, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("getting the pod informer: %w", err)
	}
	sii, ok := informer.(toolscache.SharedIndexInformer)
	if !ok {
		return fmt.Errorf("the pod informer is a %T, not a SharedIndexInformer", informer)
	}
	if err := sii.AddIndexers(toolscache.Indexers{boundPolicyIndex: func(o any) ([]string, error) {
		if pod, ok := o.(*corev1.Pod); ok {
			if p := boundPolicyOf(pod); p != "" {
				return []string{p}, nil
			}
		}
		return nil, nil
	}}); err != nil {
		return fmt.Errorf("indexing pods by the policy that bound them: %w", err)
	}
	r.pods = sii.GetIndexer()
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], policy string) {
		if policy != "" {
			q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Name: policy}}, usageDelay)
		}
	}
	pods := handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, boundPolicyOf(e.Object.(*corev1.Pod)))
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if before, after := boundPolicyOf(e.ObjectOld.(*corev1.Pod)), boundPolicyOf(e.ObjectNew.(*corev1.Pod)); before != after {
				enqueue(q, before)
				enqueue(q, after)
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if pod, ok := e.Object.(*corev1.Pod); ok {
				enqueue(q, boundPolicyOf(pod))
			}
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&bindgatev1alpha1.BindingPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Pod{}, pods).
		Named("bindingpolicy").
		Complete(r)
}
