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
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// WebhookOptions are the tunables of the outbound webhooks (bind and
// postBind), embedded in Options.
type WebhookOptions struct {
	// AllowLinkLocalWebhooks lets webhooks reach link-local and
	// cloud-metadata addresses. Off by default.
	AllowLinkLocalWebhooks bool
	// AllowedWebhookCIDRs are address ranges webhooks may reach even inside
	// the refused ones (loopback, unspecified, link-local, metadata,
	// multicast, broadcast); --webhook-allowed-cidrs.
	AllowedWebhookCIDRs []netip.Prefix
	// OperatorNamespace is the only namespace signing secrets are read from,
	// and holds the seal key Secret.
	OperatorNamespace string
	// SealKeySecret names the Secret in OperatorNamespace that holds the
	// key of the seals on bindgate's pod bookkeeping ("" means
	// DefaultSealSecretName).
	SealKeySecret string
	// WebhookBaseBackoff is the first retry delay of the bind webhook and of
	// PostBind deliveries (0: 1s); it doubles per attempt.
	WebhookBaseBackoff time.Duration
	// PostBindWorkersPerHook bounds the concurrent calls to one PostBind
	// webhook (0: 4).
	PostBindWorkersPerHook int
}

// destinations are the addresses webhooks may reach.
func (o *WebhookOptions) destinations() webhookclient.Destinations {
	return webhookclient.Destinations{AllowLinkLocal: o.AllowLinkLocalWebhooks, AllowCIDRs: o.AllowedWebhookCIDRs}
}

func (o *WebhookOptions) bindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.AllowLinkLocalWebhooks, "allow-link-local-webhooks", false,
		"Let webhooks reach link-local and cloud-metadata addresses (169.254.0.0/16, fe80::/10, fd00:ec2::254).")
	fs.Func("webhook-allowed-cidrs",
		"Comma-separated CIDRs webhooks may reach although they are refused by default (loopback 127.0.0.0/8 and ::1, unspecified, link-local, cloud metadata, multicast, broadcast), e.g. 127.0.0.1/32 for a receiver beside the operator.",
		func(v string) error {
			cidrs, err := webhookclient.ParseCIDRs(v)
			if err != nil {
				return fmt.Errorf("--webhook-allowed-cidrs: %w", err)
			}
			o.AllowedWebhookCIDRs = append(o.AllowedWebhookCIDRs, cidrs...)
			return nil
		})
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "bindgate-system"
	}
	fs.StringVar(&o.OperatorNamespace, "operator-namespace", ns,
		"The operator's namespace: the only one webhook signing secrets are read from. The default is $POD_NAMESPACE when it is set.")
	fs.StringVar(&o.SealKeySecret, "seal-key-secret", DefaultSealSecretName,
		"The Secret, in the operator's namespace, that holds the key bindgate seals its pod bookkeeping with (created or filled when empty): a pod's policy record without a valid seal is charged to no policy and gets no PostBind notice.")
	fs.DurationVar(&o.WebhookBaseBackoff, "webhook-base-backoff", postbind.DefaultBaseBackoff,
		"First retry delay of bind webhook calls and PostBind deliveries; it doubles per attempt.")
	fs.IntVar(&o.PostBindWorkersPerHook, "postbind-workers-per-hook", postbind.DefaultWorkersPerHook,
		"Concurrent deliveries per PostBind webhook.")
}

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

// setupBindWebhooks wires the bind webhook and PostBind delivery: the
// outbound webhook client, the bind webhook caller, the pending annotation
// on the binding, the delivery dispatcher and its controller, and the
// policy check that refuses forbidden webhook destinations.
func setupBindWebhooks(mgr ctrl.Manager, opts Options, sched *scheduler.Scheduler, policies *BindingPolicyReconciler) error {
	secrets := postbind.SecretReader{Reader: mgr.GetAPIReader(), Namespace: opts.OperatorNamespace}
	wc := webhookclient.New(webhookclient.Options{
		Destinations:    opts.destinations(),
		SecretNamespace: opts.OperatorNamespace,
	}, secrets)
	policies.Secrets, policies.SecretNamespace = secrets, opts.OperatorNamespace

	sched.BindWebhook = &bindhook.Caller{Client: wc, BaseBackoff: opts.WebhookBaseBackoff}
	if b, ok := sched.Binder.(*bind.Binder); ok {
		b.PostBindPending = postbind.Pending
	}
	policies.Validate = composeValidate(policies.Validate, postbind.Validate(opts.destinations()))

	d := postbind.NewDispatcher(postbind.Options{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		Webhooks:       wc,
		Recorder:       boundedRecorder{mgr.GetEventRecorder("bindgate")},
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

// composeValidate runs every non-nil check in order; the first failure wins.
func composeValidate(checks ...func(*bindgatev1alpha1.BindingPolicy) (string, string, bool)) func(*bindgatev1alpha1.BindingPolicy) (string, string, bool) {
	return func(p *bindgatev1alpha1.BindingPolicy) (string, string, bool) {
		for _, c := range checks {
			if c == nil {
				continue
			}
			if reason, msg, ok := c(p); !ok {
				return reason, msg, false
			}
		}
		return "", "", true
	}
}
