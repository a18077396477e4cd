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

// Package cache is bindgate's view of the cluster for placement. At its
// heart is kube-scheduler's own scheduler cache (pkg/scheduler/backend/cache):
// nodes, the non-terminal pods bound to them, and every reservation as an
// assumed pod on its node, exactly as kube-scheduler assumes a pod between
// its scheduling and binding cycles. Its incremental snapshot is what
// kube-scheduler's Filter and Score plugins read, so a reserved pod (waiting
// in Permit, a gang member, another replica's recorded reservation) counts
// for resources, ports, affinity and spread like a bound one.
//
// Around it the package keeps what kube-scheduler has no notion of: which
// policy holds each reservation, each policy's capacity in use (reserved and
// bound), and a per-node resource total so that Reserve can refuse, under
// one lock, a reservation that would overcommit the node.
package cache

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/utils/clock"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/metrics"
)

// releasedGrace is how long a released reservation whose pod was bound stays
// counted while the informer catches up with the bind.
const releasedGrace = 30 * time.Second

type entry struct {
	// pod is the object the scheduler cache holds: the informer's pod once
	// bound, else a copy with spec.nodeName set to the reserved node.
	pod    *corev1.Pod
	node   string
	policy string
	req    *framework.Resource
	bound  bool // the informer shows the pod bound to node (added, not assumed)
	// reserved: a reservation is held (by this process or recorded in a
	// policy's status).
	reserved bool
	// releasedAt is set when the reservation was released after a bind (or
	// the pod was seen bound by a live read); the entry is counted until the
	// informer shows the bind or the grace passes.
	releasedAt time.Time
	// reservedAt is when the reservation was taken (or recorded).
	reservedAt time.Time
}

// nodeTotals is the resource total on a node: Reserve's fit check.
type nodeTotals struct {
	node        *corev1.Node
	allocatable *framework.Resource
	requested   framework.Resource
	pods        int64
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
	clock  clock.PassiveClock
	logger klog.Logger
	sched  kcache.Cache

	mu     sync.RWMutex
	nodes  map[string]*nodeTotals
	pods   map[types.UID]*entry
	policy map[string]*framework.Resource // held per policy: reserved + bound by it
}

// New makes an empty cache. ctx bounds the scheduler cache's background
// metrics goroutine.
func New(ctx context.Context, clk clock.PassiveClock) *Cache {
	if clk == nil {
		clk = clock.RealClock{}
	}
	// The scheduler cache reports into kube-scheduler's metric vectors
	// (Register is idempotent).
	schedmetrics.Register()
	return &Cache{
		clock:  clk,
		logger: klog.FromContext(ctx).WithName("cache"),
		sched:  kcache.New(ctx, nil, false, false),
		nodes:  map[string]*nodeTotals{},
		pods:   map[types.UID]*entry{},
		policy: map[string]*framework.Resource{},
	}
}

// UpdateSnapshot brings snapshot up to date with the cache (only the nodes
// changed since its last update are copied).
func (c *Cache) UpdateSnapshot(snapshot *kcache.Snapshot) error {
	return c.sched.UpdateSnapshot(c.logger, snapshot)
}

// UpsertNode adds or updates a node.
func (c *Cache) UpsertNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nt, ok := c.nodes[node.Name]
	if !ok {
		nt = &nodeTotals{}
		c.nodes[node.Name] = nt
		for _, e := range c.pods {
			if e.node == node.Name && e.counted() {
				nt.add(e.req, 1)
			}
		}
		c.sched.AddNode(c.logger, node)
	} else {
		c.sched.UpdateNode(c.logger, nt.node, node)
	}
	nt.node = node
	nt.allocatable = framework.NewResource(node.Status.Allocatable)
}

// DeleteNode removes a node.
func (c *Cache) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nt, ok := c.nodes[name]
	if !ok {
		return
	}
	if err := c.sched.RemoveNode(c.logger, nt.node); err != nil {
		c.logger.Error(err, "Removing a node from the scheduler cache", "node", name)
	}
	delete(c.nodes, name)
}

// Node returns the node object, if known.
func (c *Cache) Node(name string) (*corev1.Node, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	nt, ok := c.nodes[name]
	if !ok {
		return nil, false
	}
	return nt.node, true
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

func (nt *nodeTotals) add(req *framework.Resource, sign int64) {
	nt.requested.AddResource(req, sign)
	nt.pods += sign
}

// account adds (sign +1) or removes (-1) e's requests from its node's totals
// and its policy, and a held reservation from the bindgate_reservations gauge.
func (c *Cache) account(e *entry, sign int64) {
	if e.reserved {
		metrics.Reservations.WithLabelValues(e.policy).Add(float64(sign))
	}
	if nt, ok := c.nodes[e.node]; ok {
		nt.add(e.req, sign)
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

// drop removes e from the scheduler cache and from the totals.
func (c *Cache) drop(uid types.UID, e *entry) {
	var err error
	if e.bound {
		err = c.sched.RemovePod(c.logger, e.pod)
	} else {
		err = c.sched.ForgetPod(c.logger, e.pod)
	}
	if err != nil {
		c.logger.Error(err, "Removing a pod from the scheduler cache", "pod", klog.KObj(e.pod))
	}
	if e.counted() {
		c.account(e, -1)
	}
	delete(c.pods, uid)
}

// BoundPolicy is the policy a bound pod is charged to: the one bindgate
// itself bound it under (bind.BoundBy: its sealed policy record), never one
// the pod's owner named in an annotation.
func BoundPolicy(pod *corev1.Pod) string {
	p, _ := bind.BoundBy(pod)
	return p
}

// UpsertPod records a pod from the informer: bound, non-terminal pods count
// on their node; a reservation of the same pod is superseded by the bind.
func (c *Cache) UpsertPod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pods[pod.UID]
	if pod.Spec.NodeName == "" || isTerminal(pod) {
		if ok && (e.bound || isTerminal(pod)) {
			// Terminated (or its reservation's pod ended): the capacity is free again.
			c.drop(pod.UID, e)
		}
		return
	}
	if ok && e.bound {
		if err := c.sched.UpdatePod(c.logger, e.pod, pod); err != nil {
			c.logger.Error(err, "Updating a pod in the scheduler cache", "pod", klog.KObj(pod))
		}
		e.pod = pod
		return
	}
	if ok {
		// Assumed (reserved, or released after the bind): the informer now
		// confirms the bind. A pod bound elsewhere than reserved moves.
		if e.node != pod.Spec.NodeName {
			if err := c.sched.ForgetPod(c.logger, e.pod); err != nil {
				c.logger.Error(err, "Forgetting a pod bound elsewhere", "pod", klog.KObj(pod))
			}
		}
		if e.counted() {
			c.account(e, -1)
		}
	}
	if err := c.sched.AddPod(c.logger, pod); err != nil {
		c.logger.Error(err, "Adding a pod to the scheduler cache", "pod", klog.KObj(pod))
	}
	ne := podEntry(pod)
	ne.bound = true
	c.pods[pod.UID] = ne
	c.account(ne, 1)
}

// podEntry is the entry of a pod bound to pod.Spec.NodeName, counted by
// neither state yet (the caller sets bound or releasedAt).
func podEntry(pod *corev1.Pod) *entry {
	return &entry{
		pod:    pod,
		node:   pod.Spec.NodeName,
		policy: BoundPolicy(pod),
		req:    framework.PodRequests(pod),
	}
}

// DeletePod forgets a pod and any reservation it held.
func (c *Cache) DeletePod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok {
		c.drop(uid, e)
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
	return e.reservation(uid), true
}

func (e *entry) reservation(uid types.UID) Reservation {
	return Reservation{
		Pod: types.NamespacedName{Namespace: e.pod.Namespace, Name: e.pod.Name}, UID: uid,
		Node: e.node, Policy: e.policy, ReservedAt: e.reservedAt,
	}
}

// Reservations lists every reservation held, sorted by pod.
func (c *Cache) Reservations() []Reservation {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []Reservation
	for uid, e := range c.pods {
		if e.reserved && !e.bound {
			out = append(out, e.reservation(uid))
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

// Reserve assumes pod on node: from now on every plugin sees it there. Under
// the lock it refuses a reservation that would overcommit the node or take
// the policy past its capacity. reservedAt zero means now.
func (c *Cache) Reserve(pod *corev1.Pod, req *framework.Resource, node string, policy *bindgatev1alpha1.BindingPolicy, reservedAt time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[pod.UID]; ok && e.counted() {
		if !e.reserved {
			return fmt.Errorf("pod %s was bound to node %s: %w", klog.KObj(pod), e.node, ErrBound)
		}
		if e.node == node {
			return nil
		}
		return fmt.Errorf("pod %s already holds capacity on node %s", klog.KObj(pod), e.node)
	}
	nt, ok := c.nodes[node]
	if !ok {
		return &UnfitError{Reasons: []string{"node not found"}}
	}
	if bad := nt.insufficient(req); len(bad) > 0 {
		return &UnfitError{Reasons: bad}
	}
	if reasons := c.exceedsBudgetLocked(policy, req); len(reasons) > 0 {
		return &UnfitError{Reasons: reasons}
	}
	if reservedAt.IsZero() {
		reservedAt = c.clock.Now()
	}
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = node
	if err := c.sched.AssumePod(c.logger, assumed); err != nil {
		return fmt.Errorf("assuming pod %s on node %s: %w", klog.KObj(pod), node, err)
	}
	e := &entry{pod: assumed, node: node, policy: policy.Name, req: req, reserved: true, reservedAt: reservedAt}
	c.pods[pod.UID] = e
	c.account(e, 1)
	return nil
}

// insufficient lists the resources req does not fit on the node, worded as
// kube-scheduler's NodeResourcesFit words them.
func (nt *nodeTotals) insufficient(req *framework.Resource) []string {
	if nt.allocatable == nil {
		return nil
	}
	var out []string
	if nt.pods+1 > nt.allocatable.AllowedPodNumber {
		out = append(out, "Too many pods")
	}
	short := func(name corev1.ResourceName, want, have, alloc int64) {
		if want > 0 && have+want > alloc {
			out = append(out, "Insufficient "+string(name))
		}
	}
	short(corev1.ResourceCPU, req.MilliCPU, nt.requested.MilliCPU, nt.allocatable.MilliCPU)
	short(corev1.ResourceMemory, req.Memory, nt.requested.Memory, nt.allocatable.Memory)
	short(corev1.ResourceEphemeralStorage, req.EphemeralStorage, nt.requested.EphemeralStorage, nt.allocatable.EphemeralStorage)
	names := make([]corev1.ResourceName, 0, len(req.Scalar))
	for name := range req.Scalar {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	for _, name := range names {
		short(name, req.Scalar[name], nt.requested.Scalar[name], nt.allocatable.Scalar[name])
	}
	return out
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
	used := c.policy[policy.Name]
	if used == nil {
		used = &framework.Resource{}
	}
	usedList := used.ResourceList()
	usedList[corev1.ResourcePods] = *resource.NewQuantity(used.AllowedPodNumber, resource.DecimalSI)
	want := req.ResourceList()
	want[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	names := make([]corev1.ResourceName, 0, len(policy.Spec.Capacity))
	for name := range policy.Spec.Capacity {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	var out []string
	for _, name := range names {
		limit := policy.Spec.Capacity[name].Quantity
		have, need := usedList[name], want[name]
		if need.IsZero() {
			continue
		}
		sum := have.DeepCopy()
		sum.Add(need)
		if sum.Cmp(limit) > 0 {
			out = append(out, fmt.Sprintf("policy %s capacity exhausted for %s: %s/%s used", policy.Name, name, have.String(), limit.String()))
		}
	}
	return out
}

// PolicyUsed is what a policy holds: reserved plus bound by it.
func (c *Cache) PolicyUsed(policy string) *framework.Resource {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if u := c.policy[policy]; u != nil {
		return u.Clone()
	}
	return &framework.Resource{}
}

// placeholder stands for a recorded reservation's pod that this process has
// not seen: its requests are all that is known.
func placeholder(r *bindgatev1alpha1.Reservation) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metaFor(r),
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "reserved", Resources: corev1.ResourceRequirements{Requests: r.Resources},
		}}},
	}
}

// AddRecorded counts a reservation found in a policy's status (written by
// this process before a restart, or by another replica). It is a no-op when the pod is already counted.
// lookup returns the reserved pod as the informer shows it (nil when
// unknown: its recorded requests stand in for it); it is called only for a
// reservation not counted yet.
func (c *Cache) AddRecorded(policy string, r *bindgatev1alpha1.Reservation, lookup func(*bindgatev1alpha1.Reservation) *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[r.PodUID]; ok && e.counted() {
		return
	}
	var pod *corev1.Pod
	if lookup != nil {
		pod = lookup(r)
	}
	var assumed *corev1.Pod
	if pod != nil && pod.UID == r.PodUID {
		assumed = pod.DeepCopy()
	} else {
		assumed = placeholder(r)
	}
	assumed.Spec.NodeName = r.Node
	if err := c.sched.AssumePod(c.logger, assumed); err != nil {
		c.logger.Error(err, "Assuming a recorded reservation", "pod", klog.KObj(assumed))
		return
	}
	e := &entry{
		pod: assumed, node: r.Node, policy: policy, req: framework.NewResource(r.Resources),
		reserved: true, reservedAt: r.ReservedAt.Time,
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
// counted on that node, unbound or terminal are left alone; a pod counted on
// another node (reserved there, then bound here by another replica) moves.
func (c *Cache) CountBound(pod *corev1.Pod) {
	if pod.Spec.NodeName == "" || isTerminal(pod) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[pod.UID]; ok && e.counted() {
		if e.node == pod.Spec.NodeName {
			return
		}
		// Counted elsewhere: this replica's (or a recorded) reservation of
		// a pod that another replica bound to another node. The pod is
		// where the API server says it is; left on the old node, the one
		// it occupies would look free.
		c.drop(pod.UID, e)
	}
	e := podEntry(pod.DeepCopy())
	if err := c.sched.AssumePod(c.logger, e.pod); err != nil {
		c.logger.Error(err, "Assuming a pod bound elsewhere", "pod", klog.KObj(pod))
		return
	}
	e.releasedAt = c.clock.Now()
	c.pods[pod.UID] = e
	c.account(e, 1)
}

// Unreserve releases a pod's reservation. It is idempotent. When bound is
// true (the pod was just bound to the reserved node) the pod stays assumed
// until the informer shows the bind.
func (c *Cache) Unreserve(uid types.UID, bound bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pods[uid]
	if !ok || !e.reserved || e.bound {
		return
	}
	if bound {
		metrics.Reservations.WithLabelValues(e.policy).Dec()
		e.reserved = false
		e.releasedAt = c.clock.Now()
		return
	}
	c.drop(uid, e)
}

// ExpireReleased drops released reservations whose bind the informer never
// confirmed within the grace period.
func (c *Cache) ExpireReleased() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for uid, e := range c.pods {
		if !e.releasedAt.IsZero() && !e.bound && !e.reserved && now.Sub(e.releasedAt) > releasedGrace {
			c.drop(uid, e)
		}
	}
}

// Overcommitted lists the resources node is overcommitted on.
func (c *Cache) Overcommitted(node string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	nt, ok := c.nodes[node]
	if !ok || nt.allocatable == nil {
		return nil
	}
	var out []string
	if nt.pods > nt.allocatable.AllowedPodNumber {
		out = append(out, "pods")
	}
	if nt.requested.MilliCPU > nt.allocatable.MilliCPU {
		out = append(out, "cpu")
	}
	if nt.requested.Memory > nt.allocatable.Memory {
		out = append(out, "memory")
	}
	if nt.requested.EphemeralStorage > nt.allocatable.EphemeralStorage {
		out = append(out, "ephemeral-storage")
	}
	for k, v := range nt.requested.Scalar {
		if v > nt.allocatable.Scalar[k] {
			out = append(out, string(k))
		}
	}
	sort.Strings(out)
	return out
}

func metaFor(r *bindgatev1alpha1.Reservation) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: r.PodNamespace, Name: r.PodName, UID: r.PodUID}
}
