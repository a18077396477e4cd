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

package placement

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	kcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/cache"
)

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=services;replicationcontrollers,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=replicasets;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses;csinodes;csidrivers;csistoragecapacities;volumeattachments,verbs=get;list;watch

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims/status,verbs=update;patch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceslices;deviceclasses;devicetaintrules,verbs=get;list;watch

// left out of kube-scheduler's default profile: what bindgate does not do
// (preempt, schedule PodGroups). DefaultBinder stays (a profile needs a
// binder) but is never run: bindgate binds itself. DynamicResources is
// left out too unless bindgate allocates devices (Options.DRA); the
// unsupported plugin then refuses pods with resourceClaims with a reason.
var leftOut = map[string]bool{
	names.DefaultPreemption:          true,
	names.GangScheduling:             true,
	names.TopologyPlacementGenerator: true,
	names.PodGroupPodsCount:          true,
}

// Profile is kube-scheduler's default profile for the policy scoring
// strategy, with bindgate's plugins: the policy's nodeSelector and the
// unsupported check first, its capacity last. dra keeps the
// DynamicResources plugin.
func Profile(strategy bindgatev1alpha1.ScoringStrategyType, percentageOfNodesToScore int32, dra bool) (*config.KubeSchedulerProfile, error) {
	var versioned configv1.KubeSchedulerConfiguration
	scheme.Scheme.Default(&versioned)
	var cfg config.KubeSchedulerConfiguration
	if err := scheme.Scheme.Convert(&versioned, &cfg, nil); err != nil {
		return nil, fmt.Errorf("converting kube-scheduler's default configuration: %w", err)
	}
	prof := cfg.Profiles[0]
	enabled := []config.Plugin{{Name: UnsupportedName}, {Name: PolicyNodeSelectorName}}
	// Each strategy's framework is a profile of its own: plugins that key
	// shared informer indexes by profile name (DynamicResources) must not
	// meet each other's.
	prof.SchedulerName = bindgatev1alpha1.SchedulerName + "-" + string(strategy)
	for _, p := range prof.Plugins.MultiPoint.Enabled {
		if !leftOut[p.Name] && (dra || p.Name != names.DynamicResources) {
			enabled = append(enabled, p)
		}
	}
	prof.Plugins.MultiPoint.Enabled = append(enabled, config.Plugin{Name: PolicyCapacityName})
	switch strategy {
	case bindgatev1alpha1.MostAllocated:
		for i := range prof.PluginConfig {
			if args, ok := prof.PluginConfig[i].Args.(*config.NodeResourcesFitArgs); ok {
				args.ScoringStrategy.Type = config.MostAllocated
			}
		}
	case bindgatev1alpha1.BalancedAllocation:
		// NodeResourcesBalancedAllocation (in the default profile) ranks
		// resource use alone: NodeResourcesFit does not score.
		prof.Plugins.Score.Disabled = append(prof.Plugins.Score.Disabled, config.Plugin{Name: names.NodeResourcesFit})
	}
	if percentageOfNodesToScore > 0 {
		prof.PercentageOfNodesToScore = &percentageOfNodesToScore
	}
	return &prof, nil
}

// Options configure a Placer.
type Options struct {
	Cache  *cache.Cache
	Client kubernetes.Interface
	// Informers is the factory the plugins' listers come from; Pods, Nodes
	// and PersistentVolumeClaims may be shared with the caller's informers
	// (SharedInformers).
	Informers informers.SharedInformerFactory
	// PercentageOfNodesToScore as kube-scheduler's (0: adaptive).
	PercentageOfNodesToScore int32
	// Parallelism as kube-scheduler's (0: its default, 16).
	Parallelism int
	// DRA configures dynamic resource allocation.
	DRA DRAOptions
}

// DRAOptions say whether the placer allocates devices to pods with
// resourceClaims, with kube-scheduler's DynamicResources plugin and a DRA
// manager built from Informers as kube-scheduler builds its own.
type DRAOptions struct {
	// Enabled runs the DynamicResources plugin. Only one scheduler may
	// allocate a device at a time: enable it only while this process is
	// the single active replica, and the API server serves
	// resource.k8s.io/v1 resourceclaims, resourceslices and deviceclasses.
	Enabled bool
	// DeviceTaintRules: the API server serves resource.k8s.io/v1
	// devicetaintrules (read when the DRADeviceTaintRules gate is on).
	DeviceTaintRules bool
	// Refusal is the reason pods with resourceClaims are refused when
	// Enabled is false (default ErrReasonDRA).
	Refusal string
	// DeviceClasses, when Enabled is false: the operator may list and
	// watch DeviceClasses, so a pod asking for an extended resource one
	// backs is refused with Refusal on the nodes that do not advertise it
	// (else such a pod finds the resource on no node: Insufficient).
	DeviceClasses bool
}

// Placer runs the placement part of the cycle.
type Placer struct {
	cache      *cache.Cache
	informers  informers.SharedInformerFactory
	frameworks map[bindgatev1alpha1.ScoringStrategyType]schedframework.Framework
	// placementOnly lists, per framework, the state keys only PreFilter,
	// Filter, PreScore and Score read (see placementOnlyKeys).
	placementOnly map[schedframework.Framework][]fwk.StateKey
	snapshot      *kcache.Snapshot
	percentage    int32

	// selectors remembers which policy nodeSelectors select every node.
	selectors *selectorMemo

	synced chan struct{}
	// dra: the DynamicResources plugin runs.
	dra bool
	// mu serialises scheduling cycles (Lock).
	mu        sync.Mutex
	nextStart int
	// filterStatuses is findNodesThatPassFilters' per-node result,
	// reused from cycle to cycle under mu.
	filterStatuses []*fwk.Status
}

// New builds one framework per scoring strategy over one snapshot.
func New(ctx context.Context, opts Options) (*Placer, error) {
	// The framework runtime records into kube-scheduler's metric vectors
	// (Register is idempotent).
	schedmetrics.Register()
	p := &Placer{
		cache:         opts.Cache,
		informers:     opts.Informers,
		frameworks:    map[bindgatev1alpha1.ScoringStrategyType]schedframework.Framework{},
		placementOnly: map[schedframework.Framework][]fwk.StateKey{},
		snapshot:      kcache.NewEmptySnapshot(),
		percentage:    opts.PercentageOfNodesToScore,
		selectors:     newSelectorMemo(),
		synced:        make(chan struct{}),
	}
	refusal := ""
	var dra fwk.SharedDRAManager
	var classes deviceClassResolver
	if opts.DRA.Enabled {
		m, err := newDRAManager(ctx, opts.Client, opts.Informers, opts.DRA.DeviceTaintRules)
		if err != nil {
			return nil, err
		}
		dra, p.dra = m, true
	} else {
		refusal = cmp.Or(opts.DRA.Refusal, ErrReasonDRA)
		if opts.DRA.DeviceClasses && utilfeature.DefaultFeatureGate.Enabled(features.DRAExtendedResource) {
			er := extendedresourcecache.NewExtendedResourceCache(klog.FromContext(ctx))
			if _, err := opts.Informers.Resource().V1().DeviceClasses().Informer().AddEventHandler(er); err != nil {
				return nil, fmt.Errorf("watching DeviceClasses: %w", err)
			}
			classes = er
		}
	}
	reg := plugins.NewInTreeRegistry()
	for name, factory := range registry(opts.Cache, p.selectors, refusal, classes) {
		if err := reg.Register(name, factory); err != nil {
			return nil, fmt.Errorf("registering plugin %s: %w", name, err)
		}
	}
	// NodeVolumeLimits reads CSINodes through a shared manager, built as
	// kube-scheduler builds it.
	csi := nodevolumelimits.NewCSIManager(opts.Informers.Storage().V1().CSINodes().Lister())
	for _, strategy := range []bindgatev1alpha1.ScoringStrategyType{
		bindgatev1alpha1.LeastAllocated, bindgatev1alpha1.MostAllocated, bindgatev1alpha1.BalancedAllocation,
	} {
		prof, err := Profile(strategy, opts.PercentageOfNodesToScore, opts.DRA.Enabled)
		if err != nil {
			return nil, err
		}
		fw, err := frameworkruntime.NewFramework(ctx, reg, prof,
			frameworkruntime.WithClientSet(opts.Client),
			frameworkruntime.WithInformerFactory(opts.Informers),
			frameworkruntime.WithSharedCSIManager(csi),
			frameworkruntime.WithSharedDRAManager(dra),
			frameworkruntime.WithSnapshotSharedLister(p.snapshot),
			frameworkruntime.WithLogger(klog.FromContext(ctx).WithName("placement")),
			frameworkruntime.WithParallelism(cmp.Or(opts.Parallelism, parallelize.DefaultParallelism)),
		)
		if err != nil {
			return nil, fmt.Errorf("building kube-scheduler's framework (%s): %w", strategy, err)
		}
		p.frameworks[strategy] = fw
		p.placementOnly[fw] = placementOnlyKeys(fw.ListPlugins())
	}
	return p, nil
}

// newDRAManager builds the DRA manager the DynamicResources plugin reads
// (claims with the allocations in flight, slices, classes) from factory, as
// kube-scheduler's scheduler.New builds it, with the DRA feature gates at
// their defaults. The informers start with the factory.
func newDRAManager(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory, taintRulesServed bool) (*dynamicresources.DefaultDRAManager, error) {
	logger := klog.FromContext(ctx)
	claims := assumecache.NewAssumeCache(logger, factory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	opts := resourceslicetracker.Options{
		EnableDeviceTaintRules:   taintRulesServed && utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules),
		EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		SliceInformer:            factory.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if opts.EnableDeviceTaintRules {
		opts.TaintInformer = factory.Resource().V1().DeviceTaintRules()
	}
	tracker, err := resourceslicetracker.StartTracker(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("starting the ResourceSlice tracker: %w", err)
	}
	m := dynamicresources.NewDRAManager(ctx, claims, tracker, factory)
	if utilfeature.DefaultFeatureGate.Enabled(features.DRAExtendedResource) {
		// The extended-resource names of device classes, which
		// NodeResourcesFit and DynamicResources read.
		if er, ok := m.DeviceClassResolver().(*extendedresourcecache.ExtendedResourceCache); ok {
			if _, err := factory.Resource().V1().DeviceClasses().Informer().AddEventHandler(er); err != nil {
				return nil, fmt.Errorf("watching DeviceClasses: %w", err)
			}
		}
	}
	return m, nil
}

// placementOnlyKeys returns the cycle-state keys that only the scheduling
// cycle reads: the PreFilter and PreScore states of the plugins with no
// Reserve, Permit, PreBind, Bind or PostBind extension point (kube-scheduler's
// in-tree plugins key them "PreFilter"+name and "PreScore"+name). A
// reservation keeps its cycle until its bind ends; without these keys it
// does not keep, for instance, InterPodAffinity's and PodTopologySpread's
// counts per topology domain, which are of no use after Reserve.
func placementOnlyKeys(enabled *config.Plugins) []fwk.StateKey {
	// done: the plugins whose states stay, and those listed already.
	done := sets.New[string]()
	for _, set := range []config.PluginSet{enabled.Reserve, enabled.Permit, enabled.PreBind, enabled.Bind, enabled.PostBind} {
		for _, pl := range set.Enabled {
			done.Insert(pl.Name)
		}
	}
	var keys []fwk.StateKey
	for _, set := range []config.PluginSet{enabled.PreFilter, enabled.Filter, enabled.PreScore, enabled.Score} {
		for _, pl := range set.Enabled {
			if !done.Has(pl.Name) {
				done.Insert(pl.Name)
				keys = append(keys, fwk.StateKey("PreFilter"+pl.Name), fwk.StateKey("PreScore"+pl.Name))
			}
		}
	}
	return keys
}

// Share makes factory hand out inf for objects of obj's type (e.g. the
// operator's own pod, node and claim informers), so that the plugins'
// listers read the same objects without a second watch.
func Share(factory informers.SharedInformerFactory, obj runtime.Object, inf toolscache.SharedIndexInformer) {
	factory.InformerFor(obj, func(kubernetes.Interface, time.Duration) toolscache.SharedIndexInformer { return inf })
}

// Start starts the plugins' informers and waits for them to sync; no cycle
// runs before. It runs on every replica (no leader election needed).
func (p *Placer) Start(ctx context.Context) error {
	p.informers.Start(ctx.Done())
	for typ, ok := range p.informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	close(p.synced)
	<-ctx.Done()
	return nil
}

// DRA says whether the placer allocates devices (DRAOptions.Enabled).
func (p *Placer) DRA() bool { return p.dra }

// NeedLeaderElection is false: a standby replica keeps its caches warm.
func (p *Placer) NeedLeaderElection() bool { return false }

// Lock starts a scheduling cycle: from the snapshot update to the
// reservation, no other cycle runs.
func (p *Placer) Lock() { p.mu.Lock() }

// Unlock ends the scheduling cycle.
func (p *Placer) Unlock() { p.mu.Unlock() }

func (p *Placer) framework(policy *bindgatev1alpha1.BindingPolicy) schedframework.Framework {
	if policy.Spec.Scoring != nil {
		if fw, ok := p.frameworks[policy.Spec.Scoring.Strategy]; ok {
			return fw
		}
	}
	return p.frameworks[bindgatev1alpha1.LeastAllocated]
}

func (p *Placer) waitSynced(ctx context.Context) error {
	select {
	case <-p.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newState is a fresh CycleState carrying the policy.
func newState(policy *bindgatev1alpha1.BindingPolicy) fwk.CycleState {
	state := schedframework.NewCycleState()
	writePolicy(state, policy)
	return state
}

// refresh waits for the informers' first sync and brings the snapshot up to
// date with the cache (incrementally, by generation). The caller holds Lock.
func (p *Placer) refresh(ctx context.Context) error {
	if err := p.waitSynced(ctx); err != nil {
		return err
	}
	epoch, err := p.cache.UpdateSnapshot(p.snapshot)
	if err != nil {
		return fmt.Errorf("updating the snapshot: %w", err)
	}
	p.selectors.setEpoch(epoch)
	return nil
}
