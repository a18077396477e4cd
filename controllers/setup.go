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

// Package controllers holds the thin reconcilers: they fetch objects, call
// into internal/ for the binding cycle, and write status.
package controllers

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/bindhook"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/dryrun"
	"github.com/bindgate/bindgate/internal/eventhandlers"
	"github.com/bindgate/bindgate/internal/ledger"
	"github.com/bindgate/bindgate/internal/options"
	"github.com/bindgate/bindgate/internal/permit"
	"github.com/bindgate/bindgate/internal/placement"
	"github.com/bindgate/bindgate/internal/policy"
	"github.com/bindgate/bindgate/internal/queue"
	"github.com/bindgate/bindgate/internal/scheduler"
)

// Options are what the controllers need of the operator's options
// (internal/options declares the flags), with the manager's leader
// election and an injectable clock.
type Options struct {
	options.Scheduling
	options.Outbound
	options.Operator
	// LeaderElection says the manager elects a leader, so that one replica
	// at a time runs the cycle. False (the zero value) is the safe
	// assumption: other replicas may be active, and "auto" makes every
	// reservation durable.
	LeaderElection bool
	// Clock is injectable for tests; nil means the real clock.
	Clock clock.Clock
	// MaxReservations lowers how many reservations a policy's status
	// records (ledger.Ledger.MaxReservations) for tests; zero means the
	// API's bound, bindgatev1alpha1.MaxReservations.
	MaxReservations int
}

// durableAll says whether every reservation is recorded before its bind.
func (o *Options) durableAll() bool { return o.DurableAll(o.LeaderElection) }

// SetupWithManager registers every controller with mgr.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Workers <= 0 {
		opts.Workers = 16
	}
	if opts.BindConcurrency <= 0 {
		opts.BindConcurrency = 64
	}
	if opts.UngateConcurrency == 0 {
		opts.UngateConcurrency = 64
	}
	// The seal key comes first: without it no pod's bookkeeping could be
	// told from what its owner wrote.
	if err := useSealKey(ctx, mgr, opts); err != nil {
		return err
	}

	cs, err := protobufClientset(mgr)
	if err != nil {
		return err
	}
	recorder, err := newEventRecorder(ctx, mgr, cs)
	if err != nil {
		return err
	}
	policies := &BindingPolicyReconciler{
		Client: mgr.GetClient(), Recorder: recorder, Validator: policy.Validator{Destinations: opts.Destinations()},
	}
	if err := policies.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the BindingPolicy controller: %w", err)
	}

	c := cache.New(ctx, opts.Clock)
	placer, factory, err := newPlacer(ctx, mgr, cs, c, opts)
	if err != nil {
		return err
	}
	handlers := &eventhandlers.Handlers{Reader: mgr.GetClient(), Cache: c}
	l := ledger.New(mgr.GetClient(), mgr.GetAPIReader(), handlers.Recheck(mgr.GetAPIReader()))
	// Several replicas may be active at once: every record is checked
	// against the status and the pods bound on its node.
	l.ValidateEveryWrite = opts.durableAll()
	l.MaxReservations = opts.MaxReservations
	if err := mgr.Add(l); err != nil {
		return fmt.Errorf("adding the ledger: %w", err)
	}
	handlers.Ledger = l
	sched := &scheduler.Scheduler{
		Client:   mgr.GetClient(),
		Cache:    c,
		Ledger:   l,
		Recorder: recorder,
		Clock:    opts.Clock,
		Placer:   placer,
		Binder:   &bind.Binder{Client: mgr.GetClient()},
		// A status-only conflict on the gate lift is read back from
		// the API server (see Scheduler.APIReader).
		APIReader: mgr.GetAPIReader(),
	}
	if err := setupHooks(mgr, opts, sched, policies, recorder); err != nil {
		return err
	}
	q := queue.New(opts.Clock, sched.ClusterChanged)
	handlers.Queue = q
	if placer.DRA() {
		if err := handlers.RegisterDRA(ctx, factory); err != nil {
			return err
		}
	}
	// Permit conditions share the outbound webhook client of bind and
	// postBind; an ended webhook call requeues its pod at once.
	permits := &permit.Builder{Client: mgr.GetClient(), Wake: q.Activate}
	if caller, ok := sched.BindHook.(*bindhook.Caller); ok {
		permits.Webhooks = caller.Client
	}
	permits.Gangs = sched.Gangs()
	handlers.MemberGone = sched.Gangs().MemberGone
	handlers.Forget = sched.Forget
	if err := setupPodGroups(ctx, mgr, sched.Gangs()); err != nil {
		return err
	}
	sched.PermitPlugins = permits.PluginsFor
	sched.Wake = q.Activate
	sched.Durability = ledger.Durability{All: opts.durableAll()}
	sched.SoleReplica = opts.LeaderElection
	sched.UngateMethod = bind.DetectMethod(ctx, mgr.GetConfig(), mgr.GetHTTPClient())

	loaded, err := handlers.AddToManager(ctx, mgr)
	if err != nil {
		return err
	}
	dry := &dryrun.Recorder{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Placer: placer, Node: c.Node, Events: recorder, Clock: opts.Clock,
	}
	if err := mgr.Add(dry); err != nil {
		return fmt.Errorf("adding the DryRun recorder: %w", err)
	}
	pods := &PodReconciler{
		Client: mgr.GetClient(), Scheduler: sched, Queue: q, Handlers: handlers, Loaded: loaded, Workers: opts.Workers,
		DryRun: dry,
	}
	sched.Async = scheduler.NewAsyncBinder(ctx, scheduler.AsyncOptions{
		Binds:   opts.BindConcurrency,
		Ungates: opts.UngateConcurrency,
	}, pods.bindDone)
	if err := pods.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the pod controller: %w", err)
	}
	return nil
}

// draOptions enables dynamic resource allocation when this process is the
// single active replica (soleReplica: leader election) and the API server
// serves what kube-scheduler's DynamicResources plugin reads. Replicas
// running side by side would each see the others' devices in flight as
// free, so they refuse pods with resourceClaims instead.
func draOptions(ctx context.Context, cs kubernetes.Interface, soleReplica bool) placement.DRAOptions {
	list, err := cs.Discovery().ServerResourcesForGroupVersion(resourcev1.SchemeGroupVersion.String())
	served := sets.New[string]()
	if err == nil {
		for _, r := range list.APIResources {
			served.Insert(r.Name)
		}
	}
	switch {
	case !served.HasAll("resourceclaims", "resourceslices", "deviceclasses"):
		ctrl.LoggerFrom(ctx).Info("Pods with resourceClaims are refused: the API server does not serve resource.k8s.io/v1", "error", err)
		return placement.DRAOptions{Refusal: placement.ErrReasonDRANotServed}
	case !soleReplica:
		ctrl.LoggerFrom(ctx).Info("Pods with resourceClaims are refused: devices are allocated only with leader election (--leader-elect=true)")
		return placement.DRAOptions{Refusal: placement.ErrReasonDRA, DeviceClasses: deniedAny(ctx, cs, deviceClassAccess) == ""}
	}
	taintRules := served.Has("devicetaintrules")
	if denied := draDenied(ctx, cs, taintRules); denied != "" {
		// Informers that may not list never sync, and no pod would be
		// placed at all: refuse the DRA pods instead.
		ctrl.LoggerFrom(ctx).Info("Pods with resourceClaims are refused: the operator's RBAC does not allow what DRA needs", "denied", denied)
		return placement.DRAOptions{Refusal: placement.ErrReasonDRAForbidden, DeviceClasses: deniedAny(ctx, cs, deviceClassAccess) == ""}
	}
	return placement.DRAOptions{Enabled: true, DeviceTaintRules: taintRules}
}

// access is one thing the operator may need to do in resource.k8s.io.
type access struct{ resource, subresource, verb string }

// deviceClassAccess is what watching DeviceClasses needs (without DRA, to
// refuse pods asking for an extended resource a DeviceClass backs, naming
// DRA): an informer that may not list never syncs, and no pod would be
// placed at all.
var deviceClassAccess = []access{{"deviceclasses", "", "list"}, {"deviceclasses", "", "watch"}}

// draDenied asks the API server (SelfSubjectAccessReview) whether this
// process may do what the DRA informers and the DynamicResources plugin do,
// and returns the first thing it may not ("" when everything is allowed).
func draDenied(ctx context.Context, cs kubernetes.Interface, taintRules bool) string {
	need := []access{
		{"resourceclaims", "", "list"}, {"resourceclaims", "", "watch"}, {"resourceclaims", "status", "update"},
		{"resourceslices", "", "list"}, {"resourceslices", "", "watch"},
		{"deviceclasses", "", "list"}, {"deviceclasses", "", "watch"},
	}
	if taintRules {
		need = append(need, access{"devicetaintrules", "", "list"}, access{"devicetaintrules", "", "watch"})
	}
	return deniedAny(ctx, cs, need)
}

// deniedAny asks the API server (SelfSubjectAccessReview) whether this
// process may do each of need in resource.k8s.io, and returns the first it
// may not ("" when everything is allowed).
func deniedAny(ctx context.Context, cs kubernetes.Interface, need []access) string {
	for _, a := range need {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: resourcev1.GroupName, Resource: a.resource, Subresource: a.subresource, Verb: a.verb,
			},
		}}
		got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		what := a.verb + " " + strings.TrimSuffix(a.resource+"/"+a.subresource, "/")
		if err != nil {
			return fmt.Sprintf("%s (%v)", what, err)
		}
		if !got.Status.Allowed {
			return what
		}
	}
	return ""
}

// newPlacer builds kube-scheduler's framework over the cache, with cs (a
// protobuf clientset, as kube-scheduler's) for its plugins. Its informer
// factory reuses the manager's pod, node and claim informers; the rest
// (volumes, storage classes, CSI objects, namespaces, workload owners for
// topology spread's defaults) it starts itself.
func newPlacer(ctx context.Context, mgr ctrl.Manager, cs kubernetes.Interface, c *cache.Cache, opts Options) (*placement.Placer, informers.SharedInformerFactory, error) {
	factory := informers.NewSharedInformerFactory(cs, 0)
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.Node{}, &corev1.PersistentVolumeClaim{}} {
		inf, err := mgr.GetCache().GetInformer(ctx, obj)
		if err != nil {
			return nil, nil, fmt.Errorf("getting the %T informer: %w", obj, err)
		}
		if shared, ok := inf.(toolscache.SharedIndexInformer); ok {
			placement.Share(factory, obj, shared)
		}
	}
	p, err := placement.New(ctx, placement.Options{
		Cache: c, Client: cs, Informers: factory, PercentageOfNodesToScore: int32(opts.PercentageOfNodesToScore), Parallelism: opts.Parallelism,
		DRA: draOptions(ctx, cs, opts.LeaderElection),
	})
	if err != nil {
		return nil, nil, err
	}
	if err := mgr.Add(p); err != nil {
		return nil, nil, fmt.Errorf("adding the placer: %w", err)
	}
	return p, factory, nil
}
