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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/bindhook"
	"github.com/bindgate/bindgate/internal/postbind"
	"github.com/bindgate/bindgate/internal/scheduler"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// PostBindReconciler hands bound pods whose PostBind notices are pending to
// the dispatcher. It never calls a webhook itself, so it never blocks.
type PostBindReconciler struct {
	client.Client
	Dispatcher *postbind.Dispatcher
}

// Signing secrets are read only in the operator's namespace. That right is
// granted by a namespaced Role (config/rbac/leader_election_role.yaml, the
// chart's leader-election Role), never by the ClusterRole: no marker here.

// Reconcile queues the pod's pending hooks.
func (r *PostBindReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := r.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if postBindPending(pod) {
		r.Dispatcher.Enqueue(pod)
	}
	return ctrl.Result{}, nil
}

// postBindPending: notices are pending on a pod bindgate itself bound
// (its sealed policy record), never on one whose owner wrote the annotation.
func postBindPending(pod *corev1.Pod) bool {
	if pod.Annotations[bindgatev1alpha1.PostBindPendingAnnotation] == "" {
		return false
	}
	_, ok := bind.BoundBy(pod)
	return ok
}

// SetupWithManager registers the reconciler for bound pods with pending
// notices.
func (r *PostBindReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			pod, ok := o.(*corev1.Pod)
			return ok && postBindPending(pod)
		}))).
		Named("postbind").
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
}

// setupHooks wires the BindHook (spec.bind.webhook) and PostBindHook
// (spec.postBind) delivery: the outbound webhook client, the BindHook caller, the pending annotation
// on the binding, the delivery dispatcher and its controller.
func setupHooks(mgr ctrl.Manager, opts Options, sched *scheduler.Scheduler, policies *BindingPolicyReconciler, recorder events.EventRecorder) error {
	secrets := postbind.SecretReader{Reader: mgr.GetAPIReader(), Namespace: opts.Namespace}
	wc := webhookclient.New(webhookclient.Options{
		Destinations:    opts.Destinations(),
		SecretNamespace: opts.Namespace,
	}, secrets)
	policies.Secrets, policies.SecretNamespace = secrets, opts.Namespace

	sched.BindHook = &bindhook.Caller{Client: wc, BaseBackoff: opts.WebhookBaseBackoff}
	if b, ok := sched.Binder.(*bind.Binder); ok {
		b.PostBindPending = postbind.Pending
	}

	d := postbind.NewDispatcher(postbind.Options{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		Webhooks:       wc,
		Recorder:       recorder,
		WorkersPerHook: opts.PostBindWorkersPerHook,
		BaseBackoff:    opts.WebhookBaseBackoff,
	})
	if err := mgr.Add(d); err != nil {
		return fmt.Errorf("adding the PostBind dispatcher: %w", err)
	}
	if err := (&PostBindReconciler{Client: mgr.GetClient(), Dispatcher: d}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PostBind controller: %w", err)
	}
	return nil
}
