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

// Package placement places a pod exactly as kube-scheduler would: it runs
// kube-scheduler's own in-tree PreFilter, Filter, PreScore, Score, Reserve
// and PreBind plugins (the default profile of the pinned k8s.io/kubernetes
// release, with its weights and feature gates) through kube-scheduler's
// framework runtime, over the snapshot of bindgate's cache, in which every
// reservation is an assumed pod. The policy's rules are plugins of the same
// framework: its nodeSelector and capacity budget filter, and its scoring
// strategy is NodeResourcesFit's scoringStrategy.
//
// One scheduling cycle runs at a time (Lock): from the snapshot update to the
// reservation, as in kube-scheduler, so that each pod sees every pod placed
// before it.
package placement

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	kcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/cache"
)

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=services;replicationcontrollers,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=replicasets;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses;csinodes;csidrivers;csistoragecapacities;volumeattachments,verbs=get;list;watch

// left out of kube-scheduler's default profile: what bindgate does not do
// (preempt, schedule PodGroups) and DRA, which the unsupported plugin
// refuses with a reason instead. DefaultBinder stays (a profile needs a
// binder) but is never run: bindgate binds itself.
var leftOut = map[string]bool{
	names.DefaultPreemption:          true,
	names.DynamicResources:           true,
	names.GangScheduling:             true,
	names.TopologyPlacementGenerator: true,
	names.PodGroupPodsCount:          true,
}

// Profile is kube-scheduler's default profile for the policy scoring
// strategy, with bindgate's plugins: the policy's nodeSelector and the
// unsupported check first, its capacity last.
func Profile(strategy bindgatev1alpha1.ScoringStrategyType, percentageOfNodesToScore int32) (*config.KubeSchedulerProfile, error) {
	var versioned configv1.KubeSchedulerConfiguration
	scheme.Scheme.Default(&versioned)
	var cfg config.KubeSchedulerConfiguration
	if err := scheme.Scheme.Convert(&versioned, &cfg, nil); err != nil {
		return nil, fmt.Errorf("converting kube-scheduler's default configuration: %w", err)
	}
	prof := cfg.Profiles[0]
	enabled := []config.Plugin{{Name: UnsupportedName}, {Name: PolicyNodeSelectorName}}
	for _, p := range prof.Plugins.MultiPoint.Enabled {
		if !leftOut[p.Name] {
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
}

// Placer runs the placement part of the cycle.
type Placer struct {
	cache      *cache.Cache
	informers  informers.SharedInformerFactory
	frameworks map[bindgatev1alpha1.ScoringStrategyType]schedframework.Framework
	snapshot   *kcache.Snapshot
	percentage int32

	synced chan struct{}
	// mu serialises scheduling cycles (Lock).
	mu        sync.Mutex
	nextStart int
}

// New builds one framework per scoring strategy over one snapshot.
func New(ctx context.Context, opts Options) (*Placer, error) {
	// The framework runtime records into kube-scheduler's metric vectors
	// (Register is idempotent).
	schedmetrics.Register()
	p := &Placer{
		cache:      opts.Cache,
		informers:  opts.Informers,
		frameworks: map[bindgatev1alpha1.ScoringStrategyType]schedframework.Framework{},
		snapshot:   kcache.NewEmptySnapshot(),
		percentage: opts.PercentageOfNodesToScore,
		synced:     make(chan struct{}),
	}
	reg := plugins.NewInTreeRegistry()
	for name, factory := range registry(opts.Cache) {
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
		prof, err := Profile(strategy, opts.PercentageOfNodesToScore)
		if err != nil {
			return nil, err
		}
		fw, err := frameworkruntime.NewFramework(ctx, reg, prof,
			frameworkruntime.WithClientSet(opts.Client),
			frameworkruntime.WithInformerFactory(opts.Informers),
			frameworkruntime.WithSharedCSIManager(csi),
			frameworkruntime.WithSnapshotSharedLister(p.snapshot),
			frameworkruntime.WithLogger(klog.FromContext(ctx).WithName("placement")),
		)
		if err != nil {
			return nil, fmt.Errorf("building kube-scheduler's framework (%s): %w", strategy, err)
		}
		p.frameworks[strategy] = fw
	}
	return p, nil
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

// NeedLeaderElection is false: a standby replica keeps its caches warm.
func (p *Placer) NeedLeaderElection() bool { return false }

// Lock starts a scheduling cycle: from the snapshot update to the
// reservation, no other cycle runs.
func (p *Placer) Lock() { p.mu.Lock() }

// Unlock ends the scheduling cycle.
func (p *Placer) Unlock() { p.mu.Unlock() }

// Cycle is a pod's placement: the framework and the CycleState its
// plugins filled, which Reserve, Unreserve and PreBind need again.
type Cycle struct {
	Node  string
	State fwk.CycleState
	fw    schedframework.Framework
}

func (p *Placer) framework(policy *bindgatev1alpha1.BindingPolicy) schedframework.Framework {
	if policy.Spec.Scoring != nil {
		if fw, ok := p.frameworks[policy.Spec.Scoring.Strategy]; ok {
			return fw
		}
	}
	return p.frameworks[bindgatev1alpha1.LeastAllocated]
}

// FitError says why no node took the pod, worded by kube-scheduler.
type FitError = schedframework.FitError

// ErrNoNodes is returned when the cluster has no node at all.
var ErrNoNodes = errors.New("no nodes available to schedule pods")

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
	if err := p.cache.UpdateSnapshot(p.snapshot); err != nil {
		return fmt.Errorf("updating the snapshot: %w", err)
	}
	return nil
}

// SelectNode runs PreFilter, Filter (over kube-scheduler's adaptive sample
// of nodes), PreScore and Score for pod under policy, and returns the best
// node. A pod that fits nowhere gets a *FitError. The caller holds Lock.
// in, when given and not nil, limits the choice to those nodes (a gang's
// topology domain); the others count as unschedulable for that reason.
func (p *Placer) SelectNode(ctx context.Context, pod *corev1.Pod, policy *bindgatev1alpha1.BindingPolicy, in ...sets.Set[string]) (*Cycle, error) {
	if err := p.refresh(ctx); err != nil {
		return nil, err
	}
	fw := p.framework(policy)
	state := newState(policy)
	allNodes, err := p.snapshot.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	if len(allNodes) == 0 {
		return nil, ErrNoNodes
	}
	diagnosis := schedframework.Diagnosis{NodeToStatus: schedframework.NewDefaultNodeToStatus()}
	fitErr := func() error {
		return &FitError{Pod: pod, NumAllNodes: len(allNodes), Diagnosis: diagnosis}
	}
	preRes, st, unschedulablePlugins := fw.RunPreFilterPlugins(ctx, state, pod)
	diagnosis.UnschedulablePlugins = unschedulablePlugins
	if !st.IsSuccess() {
		if !st.IsRejected() {
			return nil, st.AsError()
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(st)
		diagnosis.PreFilterMsg = st.Message()
		diagnosis.AddPluginStatus(st)
		return nil, fitErr()
	}
	nodes := allNodes
	if !preRes.AllNodes() {
		nodes = make([]fwk.NodeInfo, 0, len(preRes.NodeNames))
		for name := range preRes.NodeNames {
			if ni, err := p.snapshot.Get(name); err == nil {
				nodes = append(nodes, ni)
			}
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(unschedulablePlugins))))
	}
	if len(in) > 0 && in[0] != nil {
		// A gang's topology domain: the other nodes are not considered.
		kept := make([]fwk.NodeInfo, 0, min(len(nodes), in[0].Len()))
		for _, ni := range nodes {
			if in[0].Has(ni.Node().Name) {
				kept = append(kept, ni)
			}
		}
		nodes = kept
		for _, ni := range allNodes {
			if !in[0].Has(ni.Node().Name) {
				diagnosis.NodeToStatus.Set(ni.Node().Name, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ErrReasonOutsideDomain))
			}
		}
	}
	feasible, err := p.findNodesThatPassFilters(ctx, fw, state, pod, &diagnosis, nodes, len(allNodes))
	if err != nil {
		return nil, err
	}
	if len(feasible) == 0 {
		return nil, fitErr()
	}
	if len(feasible) == 1 {
		return &Cycle{Node: feasible[0].Node().Name, State: state, fw: fw}, nil
	}
	if st := fw.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
		return nil, st.AsError()
	}
	scores, st := fw.RunScorePlugins(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return nil, st.AsError()
	}
	best := schedframework.NewSortedScoredNodes(scores).Pop()
	return &Cycle{Node: best.Name, State: state, fw: fw}, nil
}

// numFeasibleNodesToFind is kube-scheduler's adaptive sample size: all
// nodes below 100, else a percentage that shrinks with cluster size (at
// least 5% and 100 nodes). percentage > 0 overrides the adaptive value.
func numFeasibleNodesToFind(percentage int32, numAllNodes int32) int32 {
	const (
		minFeasibleNodesToFind           = 100
		minFeasibleNodesPercentageToFind = 5
	)
	if numAllNodes < minFeasibleNodesToFind || percentage >= 100 {
		return numAllNodes
	}
	if percentage <= 0 {
		percentage = int32(50) - numAllNodes/125
		if percentage < minFeasibleNodesPercentageToFind {
			percentage = minFeasibleNodesPercentageToFind
		}
	}
	n := numAllNodes * percentage / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

// findNodesThatPassFilters is kube-scheduler's: the Filter plugins run in
// parallel over the nodes, starting where the last cycle stopped, until
// enough feasible nodes are found.
func (p *Placer) findNodesThatPassFilters(ctx context.Context, fw schedframework.Framework, state fwk.CycleState, pod *corev1.Pod, diagnosis *schedframework.Diagnosis, nodes []fwk.NodeInfo, numAll int) ([]fwk.NodeInfo, error) {
	n := len(nodes)
	if n == 0 {
		return nil, nil
	}
	want := numFeasibleNodesToFind(p.percentage, int32(n))
	feasible := make([]fwk.NodeInfo, want)
	var (
		found  atomic.Int32
		errMu  sync.Mutex
		first  error
		result = make([]*fwk.Status, n)
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := p.nextStart % n
	check := func(i int) {
		ni := nodes[(start+i)%n]
		st := fw.RunFilterPlugins(ctx, state, pod, ni)
		switch {
		case st.Code() == fwk.Error:
			errMu.Lock()
			if first == nil {
				first = st.AsError()
			}
			errMu.Unlock()
			cancel()
		case st.IsSuccess():
			k := found.Add(1)
			if k > want {
				cancel()
				found.Add(-1)
				return
			}
			feasible[k-1] = ni
		default:
			result[i] = st
		}
	}
	fw.Parallelizer().Until(ctx, n, check, "Filter")
	processed := int(found.Load())
	for i, st := range result {
		if st == nil {
			continue
		}
		processed++
		diagnosis.NodeToStatus.Set(nodes[(start+i)%n].Node().Name, st)
		diagnosis.AddPluginStatus(st)
	}
	p.nextStart = (p.nextStart + processed) % max(numAll, 1)
	if first != nil {
		return nil, first
	}
	return feasible[:found.Load()], nil
}

// Check runs PreFilter and Filter for pod on node alone: whether a pod that
// already holds a reservation there may still go there. The caller holds
// Lock and has taken the pod's own reservation out of the cache first (it
// must not meet itself).
func (p *Placer) Check(ctx context.Context, pod *corev1.Pod, policy *bindgatev1alpha1.BindingPolicy, node string) (*Cycle, *fwk.Status) {
	if err := p.refresh(ctx); err != nil {
		return nil, fwk.AsStatus(err)
	}
	ni, err := p.snapshot.Get(node)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node %s not found", node))
	}
	fw := p.framework(policy)
	state := newState(policy)
	preRes, st, _ := fw.RunPreFilterPlugins(ctx, state, pod)
	if !st.IsSuccess() {
		return nil, st
	}
	if !preRes.AllNodes() && !preRes.NodeNames.Has(node) {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) PreFilter")
	}
	if st := fw.RunFilterPlugins(ctx, state, pod, ni); !st.IsSuccess() {
		return nil, st
	}
	return &Cycle{Node: node, State: state, fw: fw}, nil
}

// assumed is the pod as kube-scheduler hands it to Reserve and PreBind:
// with spec.nodeName set to the chosen node.
func (c *Cycle) assumed(pod *corev1.Pod) *corev1.Pod {
	if pod.Spec.NodeName == c.Node {
		return pod
	}
	a := pod.DeepCopy()
	a.Spec.NodeName = c.Node
	return a
}

// Reserve runs the Reserve plugins (VolumeBinding assumes the pod's claims).
func (p *Placer) Reserve(ctx context.Context, c *Cycle, pod *corev1.Pod) *fwk.Status {
	return c.fw.RunReservePluginsReserve(ctx, c.State, c.assumed(pod), c.Node)
}

// Unreserve runs the Unreserve plugins. It is idempotent.
func (p *Placer) Unreserve(ctx context.Context, c *Cycle, pod *corev1.Pod) {
	c.fw.RunReservePluginsUnreserve(ctx, c.State, c.assumed(pod), c.Node)
}

// PreBind runs the PreBind plugins (VolumeBinding binds or provisions the
// pod's claims for the node and waits until they are bound).
func (p *Placer) PreBind(ctx context.Context, c *Cycle, pod *corev1.Pod) *fwk.Status {
	return c.fw.RunPreBindPlugins(ctx, c.State, c.assumed(pod), c.Node)
}

// Evaluation is what the framework says about every node for one pod: the
// first plugin that refused each refused node, and each feasible node's
// score per plugin. Nothing is reserved.
type Evaluation struct {
	// NumNodes is the number of nodes in the snapshot.
	NumNodes int
	// Refused maps each node that does not take the pod to the status of
	// the first plugin that refused it (Status.Plugin names the plugin; a
	// refusal at PreFilter applies to every node it excluded).
	Refused map[string]*fwk.Status
	// Scores are the feasible nodes' scores, weighted and normalised as
	// kube-scheduler sums them, best first (ties: node name).
	Scores []fwk.NodePluginScores
}

// Evaluate runs PreFilter and Filter for pod under policy on every node
// (no sampling), then PreScore and Score on every feasible node, and
// reports each node's verdict: the same plugins SelectNode runs, for
// explaining a placement. The caller holds Lock.
func (p *Placer) Evaluate(ctx context.Context, pod *corev1.Pod, policy *bindgatev1alpha1.BindingPolicy) (*Evaluation, error) {
	if err := p.refresh(ctx); err != nil {
		return nil, err
	}
	fw := p.framework(policy)
	state := newState(policy)
	nodes, err := p.snapshot.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	ev := &Evaluation{NumNodes: len(nodes), Refused: map[string]*fwk.Status{}}
	if len(nodes) == 0 {
		return ev, nil
	}
	preRes, st, unschedulablePlugins := fw.RunPreFilterPlugins(ctx, state, pod)
	if !st.IsSuccess() {
		if !st.IsRejected() {
			return nil, st.AsError()
		}
		if st.Plugin() == "" && unschedulablePlugins.Len() > 0 {
			st.SetPlugin(sets.List(unschedulablePlugins)[0])
		}
		for _, ni := range nodes {
			ev.Refused[ni.Node().Name] = st
		}
		return ev, nil
	}
	var feasible []fwk.NodeInfo
	for _, ni := range nodes {
		name := ni.Node().Name
		if !preRes.AllNodes() && !preRes.NodeNames.Has(name) {
			absent := fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(unschedulablePlugins)))
			if unschedulablePlugins.Len() > 0 {
				absent.SetPlugin(sets.List(unschedulablePlugins)[0])
			}
			ev.Refused[name] = absent
			continue
		}
		if st := fw.RunFilterPlugins(ctx, state, pod, ni); !st.IsSuccess() {
			if st.Code() == fwk.Error {
				return nil, st.AsError()
			}
			ev.Refused[name] = st
			continue
		}
		feasible = append(feasible, ni)
	}
	if len(feasible) == 0 {
		return ev, nil
	}
	if st := fw.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() && !st.IsSkip() {
		return nil, st.AsError()
	}
	scores, st := fw.RunScorePlugins(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return nil, st.AsError()
	}
	sort.Slice(scores, func(i, j int) bool {
		if scores[i].TotalScore != scores[j].TotalScore {
			return scores[i].TotalScore > scores[j].TotalScore
		}
		return scores[i].Name < scores[j].Name
	})
	ev.Scores = scores
	return ev, nil
}
