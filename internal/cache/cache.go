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
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/utils/clock"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/metrics"
)

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
	// recorded: the reservation was counted from a policy's status (another
	// replica's record, or this process's before a restart).
	recorded bool
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
	// Recorded says the reservation was counted from a policy's status
	// (another replica's record, or this process's before a restart), not
	// taken by this process.
	Recorded bool
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
	// deleted maps the UID of a pod the informer showed deleted to when:
	// a cycle that read the pod before cannot reserve it any more, nor a
	// policy event that still carries its record count it (see
	// deletedMemory).
	deleted map[types.UID]time.Time
	// nodeLabels is the node-labels epoch: it changes whenever a node is
	// added or deleted or its labels change (see UpdateSnapshot).
	nodeLabels uint64
}

// deletedMemory is how long a deleted pod's UID is remembered: far longer
// than a binding cycle or a policy event can lag behind the deletion.
const deletedMemory = 10 * time.Minute

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
		clock:   clk,
		logger:  klog.FromContext(ctx).WithName("cache"),
		sched:   kcache.New(ctx, nil, false, false),
		nodes:   map[string]*nodeTotals{},
		pods:    map[types.UID]*entry{},
		deleted: map[types.UID]time.Time{},
		policy:  map[string]*framework.Resource{},
	}
}

// UpdateSnapshot brings snapshot up to date with the cache (only the nodes
// changed since its last update are copied) and returns the node-labels
// epoch the snapshot now shows. The epoch changes whenever a node is added
// or deleted or its labels change, so whatever was worked out from the
// nodes' labels of one snapshot holds for every snapshot of the same epoch
// (the policy's nodeSelector plugin keeps which selectors select every
// node).
func (c *Cache) UpdateSnapshot(snapshot *kcache.Snapshot) (uint64, error) {
	// Node events change the scheduler cache and the epoch under c.mu.
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.nodeLabels, c.sched.UpdateSnapshot(c.logger, snapshot)
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

// knownBound says whether the pod is known bound to e.node: the informer
// shows it, this process bound it, or a live read showed it bound. A bound
// pod never moves.
func (e *entry) knownBound() bool { return e.bound || (!e.reserved && !e.releasedAt.IsZero()) }

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
		Node: e.node, Policy: e.policy, ReservedAt: e.reservedAt, Recorded: e.recorded,
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

// RecentlyBound says whether this process bound the pod and the informer has
// not shown the bind yet: a stale read of the pod must not start a cycle.
func (c *Cache) RecentlyBound(uid types.UID) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.pods[uid]
	return ok && e.knownBound()
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

// Overcommitted lists the resources node is overcommitted on.
func (c *Cache) Overcommitted(node string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	nt, ok := c.nodes[node]
	if !ok {
		return nil
	}
	return nt.over(&nt.requested, nt.pods)
}

// OvercommittedWith lists the resources node is overcommitted on once
// everything that holds capacity on it by the API server's word is counted:
// records is a policy's status.reservations as just read, bound the pods
// the API server listed on node just after. Besides what the cache counts
// there, a record of node (or a bound pod) adds its requests when the cache
// counts its pod nowhere or elsewhere: a pod this process reserved on one
// node while another replica recorded it on this one, or a reservation
// released here a moment ago (two pods, two holds; one of them is about to
// be refused). A record of a pod known bound elsewhere holds nothing, nor
// one of a pod deleted. All is read under one lock: a release that lands
// meanwhile cannot make the node look freer than it is.
func (c *Cache) OvercommittedWith(node string, records []bindgatev1alpha1.Reservation, bound []corev1.Pod) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	nt, ok := c.nodes[node]
	if !ok {
		return nil
	}
	requested, pods := nt.requested.Clone(), nt.pods
	countedHere := func(uid types.UID) bool {
		e, ok := c.pods[uid]
		return ok && e.counted() && e.node == node
	}
	added := map[types.UID]bool{}
	for i := range records {
		r := &records[i]
		if r.Node != node || countedHere(r.PodUID) {
			continue
		}
		if _, gone := c.deleted[r.PodUID]; gone {
			continue
		}
		if e, ok := c.pods[r.PodUID]; ok && e.knownBound() {
			continue
		}
		requested.Add(r.Resources)
		pods++
		added[r.PodUID] = true
	}
	for i := range bound {
		p := &bound[i]
		if p.Spec.NodeName != node || isTerminal(p) || added[p.UID] || countedHere(p.UID) {
			continue
		}
		requested.AddResource(framework.PodRequests(p), 1)
		pods++
	}
	return nt.over(requested, pods)
}

// over lists the resources that requested (pods pods) takes the node past.
func (nt *nodeTotals) over(requested *framework.Resource, pods int64) []string {
	if nt.allocatable == nil {
		return nil
	}
	var out []string
	if pods > nt.allocatable.AllowedPodNumber {
		out = append(out, "pods")
	}
	if requested.MilliCPU > nt.allocatable.MilliCPU {
		out = append(out, "cpu")
	}
	if requested.Memory > nt.allocatable.Memory {
		out = append(out, "memory")
	}
	if requested.EphemeralStorage > nt.allocatable.EphemeralStorage {
		out = append(out, "ephemeral-storage")
	}
	for k, v := range requested.Scalar {
		if v > nt.allocatable.Scalar[k] {
			out = append(out, string(k))
		}
	}
	sort.Strings(out)
	return out
}
