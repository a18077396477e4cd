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

// Package cache is the node-capacity snapshot: every node with the requests
// of the non-terminal pods bound to it and of the reservations held on it.
// Reserve checks fit and takes the capacity under one lock, so concurrent
// workers never double-book a node. Like kube-scheduler's assumed pods, a
// reservation stays counted after its bind until the informer shows the pod
// bound, so capacity is never briefly forgotten.
package cache

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/metrics"
	"github.com/bindgate/bindgate/internal/noderesources"
)

// releasedGrace is how long a released reservation whose pod was bound stays
// counted while the informer catches up with the bind.
const releasedGrace = 30 * time.Second

type entry struct {
	key      types.NamespacedName
	node     string
	policy   string
	req      *framework.Resource
	nzCPU    int64
	nzMem    int64
	bound    bool // the informer shows the pod bound to node
	reserved bool // a reservation is held (by this process or recorded in a policy's status)
	// releasedAt is set when the reservation was released after a bind; the
	// entry is counted until the informer shows the bind or the grace passes.
	releasedAt time.Time
	// reservedAt is when the reservation was taken (or recorded).
	reservedAt time.Time
}

// Reservation describes a held reservation.
type Reservation struct {
	Pod    types.NamespacedName
	UID    types.UID
	Node   string
	Policy string
	// ReservedAt is when the reservation was taken; the permit deadline
	// counts from it.
	ReservedAt time.Time
}

// Cache is safe for concurrent use.
type Cache struct {
	clock clock.PassiveClock

	mu     sync.RWMutex
	nodes  map[string]*framework.NodeInfo
	pods   map[types.UID]*entry
	policy map[string]*framework.Resource // held per policy: reserved + bound by it
	// order lists the nodes in arrival order, for sampling (the same
	// NodeInfo as in nodes: a visit needs no map lookup).
	order []*framework.NodeInfo
	next  atomic.Int64
}

// New makes an empty cache.
func New(clk clock.PassiveClock) *Cache {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Cache{
		clock:  clk,
		nodes:  map[string]*framework.NodeInfo{},
		pods:   map[types.UID]*entry{},
		policy: map[string]*framework.Resource{},
	}
}

// UpsertNode adds or updates a node.
func (c *Cache) UpsertNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni, ok := c.nodes[node.Name]
	if !ok {
		ni = framework.NewNodeInfo(node)
		c.nodes[node.Name] = ni
		c.order = append(c.order, ni)
		// Count what is already known to be on the node.
		for _, e := range c.pods {
			if e.node == node.Name && e.counted() {
				ni.AddPod(e.req, e.nzCPU, e.nzMem, 1)
			}
		}
		return
	}
	ni.SetNode(node)
}

// DeleteNode removes a node.
func (c *Cache) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.nodes[name]; !ok {
		return
	}
	delete(c.nodes, name)
	c.order = slices.DeleteFunc(c.order, func(ni *framework.NodeInfo) bool { return ni.Node.Name == name })
}

// Node returns the node object, if known.
func (c *Cache) Node(name string) (*corev1.Node, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ni, ok := c.nodes[name]
	if !ok {
		return nil, false
	}
	return ni.Node, true
}

// NodeCount is the number of nodes.
func (c *Cache) NodeCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.nodes)
}

func (e *entry) counted() bool { return e.bound || e.reserved || !e.releasedAt.IsZero() }

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// account adds (sign +1) or removes (-1) e's requests from its node and
// policy, and a held reservation from the bindgate_reservations gauge.
func (c *Cache) account(e *entry, sign int64) {
	if e.reserved {
		metrics.Reservations.WithLabelValues(e.policy).Add(float64(sign))
	}
	if ni, ok := c.nodes[e.node]; ok {
		ni.AddPod(e.req, e.nzCPU, e.nzMem, sign)
	}
	if e.policy != "" {
		u := c.policy[e.policy]
		if u == nil {
			u = &framework.Resource{}
			c.policy[e.policy] = u
		}
		u.AddResource(e.req, sign)
		u.AllowedPodNumber += sign
	}
}

// UpsertPod records a pod from the informer: bound, non-terminal pods count
// on their node; a reservation of the same pod is superseded by the bind.
func (c *Cache) UpsertPod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pods[pod.UID]
	if pod.Spec.NodeName == "" || isTerminal(pod) {
		if ok && e.bound {
			// Terminated: the capacity is free again.
			c.account(e, -1)
			delete(c.pods, pod.UID)
		}
		return
	}
	if ok && e.bound {
		return // already counted where it is bound
	}
	if ok && e.counted() {
		c.account(e, -1)
	}
	ne := podEntry(pod)
	ne.bound = true
	c.pods[pod.UID] = ne
	c.account(ne, 1)
}

// podEntry is the entry of a pod bound to pod.Spec.NodeName, counted by
// neither state yet (the caller sets bound or releasedAt).
func podEntry(pod *corev1.Pod) *entry {
	cpu, mem := framework.NonZeroPodRequests(pod)
	return &entry{
		key:    types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name},
		node:   pod.Spec.NodeName,
		policy: pod.Annotations[bindgatev1alpha1.PolicyAnnotation],
		req:    framework.PodRequests(pod),
		nzCPU:  cpu, nzMem: mem,
	}
}

// DeletePod forgets a pod and any reservation it held.
func (c *Cache) DeletePod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok {
		if e.counted() {
			c.account(e, -1)
		}
		delete(c.pods, uid)
	}
}

// Reserved returns the reservation held for a pod, if any.
func (c *Cache) Reserved(uid types.UID) (Reservation, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.pods[uid]
	if !ok || !e.reserved || e.bound {
		return Reservation{}, false
	}
	return Reservation{Pod: e.key, UID: uid, Node: e.node, Policy: e.policy, ReservedAt: e.reservedAt}, true
}

// Reservations lists every reservation held, sorted by pod.
func (c *Cache) Reservations() []Reservation {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []Reservation
	for uid, e := range c.pods {
		if e.reserved && !e.bound {
			out = append(out, Reservation{Pod: e.key, UID: uid, Node: e.node, Policy: e.policy, ReservedAt: e.reservedAt})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod.String() < out[j].Pod.String() })
	return out
}

// ErrBound means the pod is bound (or was bound by this process a moment ago
// and the informer has not caught up yet).
var ErrBound = errors.New("the pod is already bound")

// RecentlyBound says whether this process bound the pod and the informer has
// not shown the bind yet: a stale read of the pod must not start a cycle.
func (c *Cache) RecentlyBound(uid types.UID) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.pods[uid]
	return ok && (e.bound || (!e.reserved && !e.releasedAt.IsZero()))
}

// UnfitError says why a reservation could not be taken.
type UnfitError struct{ Reasons []string }

func (e *UnfitError) Error() string { return strings.Join(e.Reasons, ", ") }

// Reserve checks, under the lock, that pod still fits on node (and within
// the policy's capacity budget) and takes the capacity.
func (c *Cache) Reserve(pod *corev1.Pod, req *framework.Resource, node string, policy *bindgatev1alpha1.BindingPolicy) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[pod.UID]; ok && e.counted() {
		if !e.reserved {
			return fmt.Errorf("pod %s was bound to node %s: %w", e.key, e.node, ErrBound)
		}
		if e.node == node {
			return nil
		}
		return fmt.Errorf("pod %s already holds capacity on node %s", e.key, e.node)
	}
	ni, ok := c.nodes[node]
	if !ok {
		return &UnfitError{Reasons: []string{"node not found"}}
	}
	if bad := noderesources.Fits(req, ni); len(bad) > 0 {
		reasons := make([]string, 0, len(bad))
		for _, b := range bad {
			reasons = append(reasons, b.Reason)
		}
		return &UnfitError{Reasons: reasons}
	}
	if reasons := c.exceedsBudgetLocked(policy, req); len(reasons) > 0 {
		return &UnfitError{Reasons: reasons}
	}
	cpu, mem := framework.NonZeroPodRequests(pod)
	e := &entry{
		key:    types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name},
		node:   node,
		policy: policy.Name,
		req:    req,
		nzCPU:  cpu, nzMem: mem,
		reserved:   true,
		reservedAt: c.clock.Now(),
	}
	c.pods[pod.UID] = e
	c.account(e, 1)
	return nil
}

// ExceedsBudget returns reasons when req would take the policy past its
// capacity budget.
func (c *Cache) ExceedsBudget(policy *bindgatev1alpha1.BindingPolicy, req *framework.Resource) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.exceedsBudgetLocked(policy, req)
}

func (c *Cache) exceedsBudgetLocked(policy *bindgatev1alpha1.BindingPolicy, req *framework.Resource) []string {
	if len(policy.Spec.Capacity) == 0 {
		return nil
	}
	budget := framework.NewResource(policy.Spec.Capacity)
	used := c.policy[policy.Name]
	if used == nil {
		used = &framework.Resource{}
	}
	var out []string
	over := func(name corev1.ResourceName, limit, have, want int64) {
		if _, capped := policy.Spec.Capacity[name]; capped && have+want > limit {
			out = append(out, fmt.Sprintf("policy %s capacity exhausted for %s", policy.Name, name))
		}
	}
	over(corev1.ResourceCPU, budget.MilliCPU, used.MilliCPU, req.MilliCPU)
	over(corev1.ResourceMemory, budget.Memory, used.Memory, req.Memory)
	over(corev1.ResourceEphemeralStorage, budget.EphemeralStorage, used.EphemeralStorage, req.EphemeralStorage)
	over(corev1.ResourcePods, budget.AllowedPodNumber, used.AllowedPodNumber, 1)
	for name, limit := range budget.Scalar {
		over(name, limit, used.Scalar[name], req.Scalar[name])
	}
	return out
}

// AddRecorded counts a reservation found in a policy's status (written by
// this process before a restart, or by another replica). It is a no-op
// when the pod is already counted.
func (c *Cache) AddRecorded(policy string, r *bindgatev1alpha1.Reservation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[r.PodUID]; ok && e.counted() {
		return
	}
	req := framework.NewResource(r.Resources)
	e := &entry{
		key:    types.NamespacedName{Namespace: r.PodNamespace, Name: r.PodName},
		node:   r.Node,
		policy: policy,
		req:    req,
		// Recorded reservations keep no scoring defaults; use the requests.
		nzCPU: max(req.MilliCPU, framework.DefaultMilliCPURequest), nzMem: max(req.Memory, framework.DefaultMemoryRequest),
		reserved:   true,
		reservedAt: r.ReservedAt.Time,
	}
	c.pods[r.PodUID] = e
	c.account(e, 1)
}

// CountBound counts a pod that a live read from the API server shows bound
// but the informer has not shown yet (its bind may have been another
// replica's, whose reservation is already gone from the policy's status). It
// is counted like a reservation released after its bind: until the informer
// shows the pod (bound, terminal or deleted) or the grace passes, so a pod
// deleted before this read cannot hold capacity for longer. Pods already
// counted, unbound or terminal are left alone.
func (c *Cache) CountBound(pod *corev1.Pod) {
	if pod.Spec.NodeName == "" || isTerminal(pod) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[pod.UID]; ok && e.counted() {
		return
	}
	e := podEntry(pod)
	e.releasedAt = c.clock.Now()
	c.pods[pod.UID] = e
	c.account(e, 1)
}

// Unreserve releases a pod's reservation. It is idempotent. When bound is
// true (the pod was just bound to the reserved node) the capacity stays
// counted until the informer shows the bind.
func (c *Cache) Unreserve(uid types.UID, bound bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pods[uid]
	if !ok || !e.reserved || e.bound {
		return
	}
	metrics.Reservations.WithLabelValues(e.policy).Dec()
	e.reserved = false
	if bound {
		e.releasedAt = c.clock.Now()
		return
	}
	c.account(e, -1)
	delete(c.pods, uid)
}

// ExpireReleased drops released reservations whose bind the informer never
// confirmed within the grace period.
func (c *Cache) ExpireReleased() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for uid, e := range c.pods {
		if !e.releasedAt.IsZero() && !e.bound && now.Sub(e.releasedAt) > releasedGrace {
			c.account(e, -1)
			delete(c.pods, uid)
		}
	}
}

// Overcommitted lists the resources node is overcommitted on.
func (c *Cache) Overcommitted(node string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ni, ok := c.nodes[node]
	if !ok {
		return nil
	}
	var out []string
	if ni.PodCount > ni.Allocatable.AllowedPodNumber {
		out = append(out, "pods")
	}
	if ni.Requested.MilliCPU > ni.Allocatable.MilliCPU {
		out = append(out, "cpu")
	}
	if ni.Requested.Memory > ni.Allocatable.Memory {
		out = append(out, "memory")
	}
	if ni.Requested.EphemeralStorage > ni.Allocatable.EphemeralStorage {
		out = append(out, "ephemeral-storage")
	}
	for k, v := range ni.Requested.Scalar {
		if v > ni.Allocatable.Scalar[k] {
			out = append(out, string(k))
		}
	}
	return out
}

// PodCountOnNode returns how many pods and reservations count on node.
func (c *Cache) PodCountOnNode(node string) int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if ni, ok := c.nodes[node]; ok {
		return ni.PodCount
	}
	return 0
}

// NumFeasibleNodesToFind is kube-scheduler's adaptive sample size: all
// nodes below 100, else a percentage that shrinks with cluster size (at
// least 5% and 100 nodes). percentage > 0 overrides the adaptive value.
func NumFeasibleNodesToFind(numAllNodes int, percentage int32) int {
	const minFeasible = 100
	if numAllNodes < minFeasible || percentage >= 100 {
		return numAllNodes
	}
	pct := percentage
	if pct <= 0 {
		pct = int32(50 - numAllNodes/125)
		if pct < 5 {
			pct = 5
		}
	}
	n := numAllNodes * int(pct) / 100
	if n < minFeasible {
		return minFeasible
	}
	return n
}

// VisitNodes calls visit for nodes under the read lock, starting where
// the previous walk stopped (as kube-scheduler rotates its start index),
// until visit returns false. visit must not call back into the cache.
func (c *Cache) VisitNodes(visit func(*framework.NodeInfo) bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.order)
	if n == 0 {
		return
	}
	start := int(c.next.Load() % int64(n))
	visited := 0
	for i := range n {
		visited++
		if !visit(c.order[(start+i)%n]) {
			break
		}
	}
	c.next.Add(int64(visited))
}
