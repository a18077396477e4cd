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
	"flag"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/bindhook"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/dryrun"
	"github.com/bindgate/bindgate/internal/eventhandlers"
	"github.com/bindgate/bindgate/internal/ledger"
	"github.com/bindgate/bindgate/internal/permit"
	"github.com/bindgate/bindgate/internal/placement"
	"github.com/bindgate/bindgate/internal/queue"
	"github.com/bindgate/bindgate/internal/scheduler"
)

// Options are the operator's tunables, bound to command-line flags.
type Options struct {
	// Workers is the number of pods cycled concurrently.
	Workers int
	// BindConcurrency bounds the asynchronous binds in flight.
	BindConcurrency int
	// DurableReservations is "auto" (the default, also when empty),
	// "always" or "waiting" (see the flag).
	DurableReservations string
	// LeaderElection says the manager elects a leader, so that one replica
	// at a time runs the cycle. False (the zero value) is the safe
	// assumption: other replicas may be active, and "auto" makes every
	// reservation durable.
	LeaderElection bool
	// PercentageOfNodesToScore overrides the adaptive node sample (0: adaptive).
	PercentageOfNodesToScore int
	// Clock is injectable for tests; nil means the real clock.
	Clock clock.Clock
	// WebhookOptions configure the bind and postBind webhooks.
	WebhookOptions
}

// BindFlags registers the options on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	o.bindFlags(fs)
	fs.IntVar(&o.Workers, "workers", 16, "Number of pods that run the binding cycle concurrently.")
	fs.StringVar(&o.DurableReservations, "durable-reservations", DurableAuto,
		"Which reservations are recorded in the policy's status before the pod goes on: auto (always when --leader-elect=false, else waiting), waiting (those of pods that wait in Permit or call a bind webhook; the rest bind at once, safe only while leader election keeps a single active replica) or always (every one; the ledger's optimistic concurrency then keeps replicas running without leader election from double-booking).")
	fs.IntVar(&o.BindConcurrency, "bind-concurrency", 64,
		"Binds in flight at once: reserved and permitted pods are bound by a pool of this many goroutines, apart from the workers (as kube-scheduler's binding cycle runs apart from its scheduling cycle), so workers move on to the next pod.")
	fs.IntVar(&o.PercentageOfNodesToScore, "percentage-of-nodes-to-score", 0,
		"Percentage of nodes to find feasible before scoring, as kube-scheduler's percentageOfNodesToScore; 0 adapts to cluster size.")
}

// RESTConfig returns a copy of cfg as the operator's clients use it: without
// response compression, as kube-scheduler's clients (it sets
// DisableCompression too). Otherwise the API server gzips every event of the
// informers' watch-list streams, each flush on its own — CPU it and the
// operator spend on every pod update, for a connection that usually stays
// inside the cluster.
func RESTConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.DisableCompression = true
	return cfg
}

// CacheOptions keeps only what the cycle needs in the informer cache:
// managedFields are stripped from every object.
func CacheOptions() crcache.Options {
	return crcache.Options{DefaultTransform: crcache.TransformStripManagedFields()}
}

// Values of --durable-reservations.
const (
	DurableAuto    = "auto"
	DurableWaiting = "waiting"
	DurableAlways  = "always"
)

// Validate checks the options.
func (o *Options) Validate() error {
	switch o.DurableReservations {
	case "", DurableAuto, DurableWaiting, DurableAlways:
		return nil
	}
	return fmt.Errorf("--durable-reservations=%q: want auto, waiting or always", o.DurableReservations)
}

// DurableAll says whether every reservation is recorded in the policy's
// status before its bind: always, or auto (and unset) without leader
// election, when replicas may run the cycle at once and only the ledger's
// optimistic concurrency keeps them from double-booking.
func (o *Options) DurableAll() bool {
	switch o.DurableReservations {
	case DurableAlways:
		return true
	case DurableWaiting:
		return false
	default:
		return !o.LeaderElection
	}
}

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
	// The seal key comes first: without it no pod's bookkeeping could be
	// told from what its owner wrote.
	secret := opts.SealKeySecret
	if secret == "" {
		secret = DefaultSealSecretName
	}
	key, err := loadSealKey(ctx, mgr.GetClient(), mgr.GetAPIReader(), types.NamespacedName{Namespace: opts.OperatorNamespace, Name: secret})
	if err != nil {
		return err
	}
	bind.UseSealKey(key)

	recorder := boundedRecorder{mgr.GetEventRecorder("bindgate")}
	policies := &BindingPolicyReconciler{Client: mgr.GetClient(), Recorder: recorder, Validate: validatePolicy}
	if err := policies.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the BindingPolicy controller: %w", err)
	}

	c := cache.New(ctx, opts.Clock)
	placer, err := newPlacer(ctx, mgr, c, opts)
	if err != nil {
		return err
	}
	handlers := &eventhandlers.Handlers{Reader: mgr.GetClient(), Cache: c}
	l := ledger.New(mgr.GetClient(), mgr.GetAPIReader(), handlers.Recheck(mgr.GetAPIReader()))
	// Several replicas may be active at once: every record is checked
	// against the status and the pods bound on its node.
	l.ValidateEveryWrite = opts.DurableAll()
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
	}
	if err := setupBindWebhooks(mgr, opts, sched, policies); err != nil {
		return err
	}
	q := queue.New(opts.Clock, sched.ClusterChanged)
	handlers.Queue = q
	// Permit conditions share the outbound webhook client of bind and
	// postBind; an ended webhook call requeues its pod at once.
	permits := &permit.Builder{Client: mgr.GetClient(), Wake: q.Activate}
	if caller, ok := sched.BindWebhook.(*bindhook.Caller); ok {
		permits.Webhooks = caller.Client
	}
	permits.Gangs = sched.Gangs()
	handlers.MemberGone = sched.Gangs().MemberGone
	if err := setupPodGroups(ctx, mgr, sched.Gangs()); err != nil {
		return err
	}
	sched.PermitPlugins = permits.PluginsFor
	sched.Wake = q.Activate
	sched.Durability = ledger.Durability{All: opts.DurableAll()}
	sched.SoleReplica = opts.LeaderElection
	sched.UngateMethod = ungateMethod(ctx, mgr)

	if err := handlers.Register(ctx, mgr.GetCache()); err != nil {
		return err
	}
	loader := eventhandlers.NewLoader(handlers, mgr.GetCache())
	if err := mgr.Add(loader); err != nil {
		return fmt.Errorf("adding the ledger loader: %w", err)
	}
	if err := mgr.Add(eventhandlers.Expirer{Cache: c}); err != nil {
		return fmt.Errorf("adding the reservation expirer: %w", err)
	}
	dry := &dryrun.Recorder{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Placer: placer, Node: c.Node, Events: recorder, Clock: opts.Clock,
	}
	if err := mgr.Add(dry); err != nil {
		return fmt.Errorf("adding the DryRun recorder: %w", err)
	}
	pods := &PodReconciler{
		Client: mgr.GetClient(), Scheduler: sched, Queue: q, Handlers: handlers, Loaded: loader.Loaded(), Workers: opts.Workers,
		DryRun: dry,
	}
	sched.Async = scheduler.NewAsyncBinder(ctx, opts.BindConcurrency, pods.bindDone)
	if err := pods.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the pod controller: %w", err)
	}
	return nil
}

// validatePolicy refuses a policy whose permit expressions do not compile:
// its Ready condition turns False with reason InvalidExpression, and its pods
// stay gated (PolicyNotReady) until it is fixed.
func validatePolicy(p *bindgatev1alpha1.BindingPolicy) (reason, message string, ok bool) {
	if err := permit.Compile(p); err != nil {
		return bindgatev1alpha1.ReasonInvalidExpression, err.Error(), false
	}
	return "", "", true
}

// newPlacer builds kube-scheduler's framework over the cache. Its informer
// factory reuses the manager's pod, node and claim informers; the rest
// (volumes, storage classes, CSI objects, namespaces, workload owners for
// topology spread's defaults) it starts itself.
func newPlacer(ctx context.Context, mgr ctrl.Manager, c *cache.Cache, opts Options) (*placement.Placer, error) {
	cs, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating a clientset: %w", err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.Node{}, &corev1.PersistentVolumeClaim{}} {
		inf, err := mgr.GetCache().GetInformer(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("getting the %T informer: %w", obj, err)
		}
		if shared, ok := inf.(toolscache.SharedIndexInformer); ok {
			placement.Share(factory, obj, shared)
		}
	}
	p, err := placement.New(ctx, placement.Options{
		Cache: c, Client: cs, Informers: factory, PercentageOfNodesToScore: int32(opts.PercentageOfNodesToScore),
	})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(p); err != nil {
		return nil, fmt.Errorf("adding the placer: %w", err)
	}
	return p, nil
}

// ungateMethod asks the API server its version once: pods are ungated by a
// whole-pod update when it is not newer than this binary, else by a patch.
func ungateMethod(ctx context.Context, mgr ctrl.Manager) bind.Method {
	log := ctrl.LoggerFrom(ctx).WithName("setup")
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		log.Error(err, "Unable to create a discovery client; ungating by patch")
		return bind.ByPatch
	}
	info, err := dc.ServerVersion()
	if err != nil {
		log.Error(err, "Unable to read the API server version; ungating by patch")
		return bind.ByPatch
	}
	m := bind.MethodFor(info)
	log.Info("Chose how to lift the scheduling gate", "method", m, "apiServerVersion", info.GitVersion)
	return m
}
