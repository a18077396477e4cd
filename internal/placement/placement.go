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
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// Cycle is a pod's placement: the framework and the CycleState its
// plugins filled, which Reserve, Unreserve and PreBind need again.
type Cycle struct {
	Node  string
	State fwk.CycleState
	fw    schedframework.Framework
	// pod is the assumed pod, built once by Assumed.
	pod *corev1.Pod
}

// FitError says why no node took the pod, worded by kube-scheduler.
type FitError = schedframework.FitError

// ErrNoNodes is returned when the cluster has no node at all.
var ErrNoNodes = errors.New("no nodes available to schedule pods")

// SelectNode runs PreFilter, Filter (over kube-scheduler's adaptive sample
// of nodes), PreScore and Score for pod under policy, and returns the best
// node. A pod that fits nowhere gets a *FitError. The caller holds Lock.
// in, when given and not nil, limits the choice to those nodes (a gang's
// topology domain); the others count as unschedulable for that reason.
// Every cycle runs in full: kube-scheduler's OpportunisticBatching never
// hints with the default profile (see TestKubeSchedulerDefaultProfileDoesNotBatch).
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
		if len(in) == 0 || in[0] == nil {
			p.postFilter(ctx, fw, state, pod, &diagnosis)
		}
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

// postFilter runs kube-scheduler's PostFilter plugins for a DRA pod that no
// node takes: DynamicResources deallocates a claim
// allocated for the pod (reserved for nobody else) whose node no longer
// takes it, so that the next attempt may allocate it elsewhere, and says so
// in the FitError's message as kube-scheduler does. DefaultPreemption, the
// other PostFilter plugin of the default profile, is not in bindgate's. The
// caller does not run it when a gang's topology domain narrowed the nodes:
// the claim is not what failed there.
func (p *Placer) postFilter(ctx context.Context, fw schedframework.Framework, state fwk.CycleState, pod *corev1.Pod, diagnosis *schedframework.Diagnosis) {
	// DynamicResources has a state for the pod unless its PreFilter
	// skipped it: the pod has resourceClaims, or an extended resource a
	// DeviceClass backs (whose claim a failed bind may have left behind:
	// PostFilter deletes it, as in kube-scheduler).
	if !p.dra || state.GetSkipFilterPlugins().Has(names.DynamicResources) {
		return
	}
	_, st := fw.RunPostFilterPlugins(ctx, state, pod, diagnosis.NodeToStatus)
	if st.Code() == fwk.Error {
		klog.FromContext(ctx).V(2).Info("PostFilter failed", "pod", klog.KObj(pod), "err", st.AsError())
		return
	}
	diagnosis.PostFilterMsg = st.Message()
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
	// result has a slot per node, filled only for the nodes that fail:
	// kube-scheduler allocates it every cycle; one cycle runs at a time
	// (Lock), so bindgate keeps it and clears what the cycle wrote.
	if cap(p.filterStatuses) < n {
		p.filterStatuses = make([]*fwk.Status, n)
	}
	result := p.filterStatuses[:n]
	defer clear(result)
	var (
		found atomic.Int32
		errMu sync.Mutex
		first error
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

// Assumed is the pod as kube-scheduler keeps it in its cache and hands it
// to Reserve, Unreserve and PreBind: with spec.nodeName set to the chosen
// node. As in kube-scheduler, one copy serves them all: it is built by the
// first call (the scheduler's, before Reserve, while the cycle is not yet
// shared) and read-only from then on, since bindgate's cache keeps the same
// object.
func (c *Cycle) Assumed(pod *corev1.Pod) *corev1.Pod {
	if c.pod == nil || c.pod.UID != pod.UID {
		a := pod.DeepCopy()
		a.Spec.NodeName = c.Node
		c.pod = a
	}
	return c.pod
}

// Reserve runs the Reserve plugins (VolumeBinding assumes the pod's claims),
// then drops from the cycle's state what only the scheduling cycle reads:
// the cycle is kept until the bind ends, and no later extension point
// reads the Filter and Score plugins' states.
func (p *Placer) Reserve(ctx context.Context, c *Cycle, pod *corev1.Pod) *fwk.Status {
	st := c.fw.RunReservePluginsReserve(ctx, c.State, c.Assumed(pod), c.Node)
	if st.IsSuccess() {
		for _, key := range p.placementOnly[c.fw] {
			c.State.Delete(key)
		}
	}
	return st
}

// Unreserve runs the Unreserve plugins. It is idempotent.
func (p *Placer) Unreserve(ctx context.Context, c *Cycle, pod *corev1.Pod) {
	c.fw.RunReservePluginsUnreserve(ctx, c.State, c.Assumed(pod), c.Node)
}

// PreBind runs the PreBind plugins (VolumeBinding binds or provisions the
// pod's claims for the node and waits until they are bound).
func (p *Placer) PreBind(ctx context.Context, c *Cycle, pod *corev1.Pod) *fwk.Status {
	return c.fw.RunPreBindPlugins(ctx, c.State, c.Assumed(pod), c.Node)
}
