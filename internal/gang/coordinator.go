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

package gang

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/ledger"
	"github.com/bindgate/bindgate/internal/metrics"
)

// Handle is what the group step needs from the scheduler.
type Handle interface {
	// Reserved returns the node and policy of the pod's reservation.
	Reserved(uid types.UID) (node, policy string, ok bool)
	// Lock and Unlock bracket one scheduling cycle: members placed under
	// one lock see each other (anti-affinity, spread, ports, fit).
	Lock()
	Unlock()
	// Place runs the Filter and Score plugins for pod on the nodes in
	// (nil: every node) and assumes it on the best one, in memory only.
	// The caller holds the lock.
	Place(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod, in sets.Set[string]) (string, error)
	// Forget undoes a Place that was not recorded, or a recorded
	// reservation (idempotent).
	Forget(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod)
	// Record makes the pod's reservation durable, taken at.
	Record(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod, at time.Time) error
	// RecordAll makes the pods' reservations durable together, taken at:
	// none of them when the policy's status has no room for all (each
	// then fails with ledger.ErrStatusFull). One result per pod.
	RecordAll(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pods []*corev1.Pod, at time.Time) []error
	// Waiting tells the pod why its gang waits (the Permitted condition).
	// The pod may be the cache's own object: it is not changed.
	Waiting(ctx context.Context, pod *corev1.Pod, msg string)
	// ReleaseMember releases a member's reservation because its gang timed
	// out, and tells it msg.
	ReleaseMember(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod, msg string)
	// Wake requeues the pod at once.
	Wake(pod *corev1.Pod)
	// RecentlyBound says whether this process bound the pod a moment ago
	// (its informer may not show it yet).
	RecentlyBound(uid types.UID) bool
}

// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=podgroups,verbs=get;list;watch

// Coordinator runs the group step of gangs. Create one per process.
type Coordinator struct {
	// Client lists a gang's members and the nodes (the manager's cache).
	Client client.Client
	Handle Handle
	Clock  clock.PassiveClock

	// PodGroups says the API server serves scheduling.k8s.io/v1beta1
	// PodGroups: a pod naming one in spec.schedulingGroup is a member of
	// its gang (minCount, topology keys).
	PodGroups bool

	// mu serialises the steps of one gang (its all-or-nothing
	// reservation, its checks, its release), striped by gang: the gangs of
	// other stripes go on meanwhile (their placements are serialised by
	// the placement lock alone), so that many gangs arriving together are
	// recorded in shared group commits instead of one after the other.
	mu [64]sync.Mutex
	// placed maps a gang (namespace/group) to where it was placed.
	placed sync.Map
	// notices throttles what a waiting gang tells its other members.
	notices notices
	// AfterFunc runs f after d (time.AfterFunc when nil).
	AfterFunc func(d time.Duration, f func())
}

func key(ns, group string) string { return ns + "/" + group }

func (c *Coordinator) placement(pod *corev1.Pod) (Placement, bool) {
	v, ok := c.placed.Load(key(pod.Namespace, groupOf(pod)))
	if !ok {
		return Placement{}, false
	}
	return v.(Placement), true
}

// Do runs f, under the gang lock when pod is a gang member under policy:
// a reservation another member's step holds only tentatively (and may
// still roll back) is never read as a final one.
func (c *Coordinator) Do(policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod, f func()) {
	group := ""
	if name := c.podGroupName(pod); name != "" {
		group = name
	} else if s, ok := Of(policy, pod); ok {
		group = s.Group
	}
	if group != "" {
		mu := c.lock(key(pod.Namespace, group))
		mu.Lock()
		defer mu.Unlock()
	}
	f()
}

// podGroupName is the upstream PodGroup whose gang the pod is in ("" when
// it names none or the API server does not serve PodGroups): Do, spec and
// MemberGone find a pod's gang the same way.
func (c *Coordinator) podGroupName(pod *corev1.Pod) string {
	if !c.PodGroups {
		return ""
	}
	return PodGroupName(pod)
}

// lock returns the lock of the gang k (namespace/group; see spec for
// which group a pod is in).
func (c *Coordinator) lock(k string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(k))
	return &c.mu[h.Sum32()%uint32(len(c.mu))]
}

// spec returns the pod's gang (Lookup, with the PodGroups the API server
// serves).
func (c *Coordinator) spec(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod) (Spec, bool, error) {
	return Lookup(ctx, c.Client, policy, pod, c.PodGroups)
}

// Lookup returns the pod's gang: its upstream PodGroup's when it names one
// with a gang scheduling policy and podGroups (the API server serves
// PodGroups) is set, else its policy's gang condition and group label. A
// PodGroup not created yet is ErrPodGroupMissing, with the Spec naming it:
// the pod waits for it (WaitMessage says so).
func Lookup(ctx context.Context, r client.Reader, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod, podGroups bool) (Spec, bool, error) {
	name := ""
	if podGroups {
		name = PodGroupName(pod)
	}
	if name == "" {
		s, ok := Of(policy, pod)
		return s, ok, nil
	}
	pg := &schedulingv1beta1.PodGroup{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: name}, pg); err != nil {
		if apierrors.IsNotFound(err) {
			return Spec{Condition: PodGroupCondition, Group: name, PodGroup: true}, true, ErrPodGroupMissing
		}
		return Spec{}, false, fmt.Errorf("reading PodGroup %s: %w", name, err)
	}
	gp := pg.Spec.SchedulingPolicy.Gang
	if gp == nil {
		return Spec{}, false, nil // a basic PodGroup: pods are placed one by one
	}
	s := Spec{Condition: PodGroupCondition, Group: name, MinMember: int(gp.MinCount), PodGroup: true}
	if pc, ok := Of(policy, pod); ok {
		s.Condition = pc.Condition
	}
	if sc := pg.Spec.SchedulingConstraints; sc != nil && len(sc.Topology) > 0 {
		for _, t := range sc.Topology {
			s.Levels = append(s.Levels, t.Key)
		}
		s.Required = true
	}
	return s, true, nil
}

// Role says how the gang step counts m, a pod of pod's gang: placed when
// it is bound or holds a reservation (held); waiting with pod when it is
// pod or bindgate places it under pod's policy label (gated,
// schedulerName: bindgate, or ungated by bindgate and not bound yet: a
// member whose bind failed after its gate was lifted, without which the
// members that failed together waited for each other forever); neither
// when it is being deleted or placed by someone else.
func Role(pod, m *corev1.Pod, held bool) (placed, waiting bool) {
	switch {
	case m.DeletionTimestamp != nil:
		return false, false
	case held || m.Spec.NodeName != "":
		return true, false
	case m.UID == pod.UID:
		return false, true
	}
	return false, bind.Ours(m) && m.Labels[bindgatev1alpha1.PolicyLabel] == pod.Labels[bindgatev1alpha1.PolicyLabel]
}

// WaitMessage is the wait of a gang with members of its spec.MinMember
// (placed or waiting) and none reserved, as its members are told it; a
// missing PodGroup (err ErrPodGroupMissing) is named instead.
func WaitMessage(spec Spec, members int, err error) string {
	if errors.Is(err, ErrPodGroupMissing) {
		return fmt.Sprintf("gang %s: PodGroup %s not found", spec.Group, spec.Group)
	}
	return fmt.Sprintf("gang %s: %d/%d members exist, none reserved", spec.Group, members, spec.MinMember)
}

// ErrPodGroupMissing: the pod names a PodGroup that does not exist (yet).
var ErrPodGroupMissing = errors.New("PodGroup not found")

// members lists the pods of the gang. With client.UnsafeDisableDeepCopy
// in more, they are the cache's own objects: only to be read.
func (c *Coordinator) members(ctx context.Context, ns string, spec Spec, more ...client.ListOption) ([]corev1.Pod, error) {
	var list corev1.PodList
	match := client.MatchingLabels{bindgatev1alpha1.GroupLabel: spec.Group}
	var opt client.ListOption = match
	if spec.PodGroup {
		opt = client.MatchingFields{PodGroupIndex: spec.Group}
	}
	if err := c.Client.List(ctx, &list, append([]client.ListOption{client.InNamespace(ns), opt}, more...)...); err != nil {
		return nil, fmt.Errorf("listing gang %s: %w", spec.Group, err)
	}
	return list.Items, nil
}

// Reserve is the group step, run before the pod's own Reserve. A nil
// Status lets the cycle go on: the pod is no gang member, or joins a
// placed gang (reserved here when the gang has a topology, else by the
// caller), or now holds a reservation taken with its whole gang. Otherwise
// every unplaced member was told why the gang waits (Unschedulable), or an
// error stopped the step (Error); nothing is held then.
//
// Members already bound or holding a reservation count as placed. Once
// minMember are placed, later members join the gang (inside its domain
// when it has a topology). Before that, every unplaced member is placed in
// one scheduling cycle: all of them get a reservation or none does.
func (c *Coordinator) Reserve(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod) *framework.Status {
	spec, ok, err := c.spec(ctx, policy, pod)
	if errors.Is(err, ErrPodGroupMissing) {
		return c.wait(ctx, spec, pod, nil, WaitMessage(spec, 0, err))
	}
	if err != nil {
		return framework.AsStatus(err)
	}
	if !ok {
		return nil
	}
	mu := c.lock(key(pod.Namespace, spec.Group))
	mu.Lock()
	defer mu.Unlock()
	if _, _, held := c.Handle.Reserved(pod.UID); held {
		return nil // reserved by another member's step
	}
	// The cache's own objects (every arriving member lists its whole gang):
	// read here, and copied before they are placed.
	items, err := c.members(ctx, pod.Namespace, spec, client.UnsafeDisableDeepCopy)
	if err != nil {
		return framework.AsStatus(err)
	}
	var placed, pending []*corev1.Pod
	// Counted under the placement lock, as in Check: a member checked
	// again before its bind is not seen unplaced (and placed twice).
	c.Handle.Lock()
	for i := range items {
		m := &items[i]
		// A member bound a moment ago (its reservation released, the
		// informer not showing the bind yet) is placed too.
		_, _, held := c.Handle.Reserved(m.UID)
		switch isPlaced, waiting := Role(pod, m, held || c.Handle.RecentlyBound(m.UID)); {
		case isPlaced:
			placed = append(placed, m)
		case waiting:
			pending = append(pending, m)
		}
	}
	c.Handle.Unlock()
	if len(placed) >= spec.MinMember {
		return c.join(ctx, policy, spec, pod, placed)
	}
	if len(placed)+len(pending) < spec.MinMember {
		return c.wait(ctx, spec, pod, pending, WaitMessage(spec, len(placed)+len(pending), nil))
	}
	for i, m := range pending {
		pending[i] = m.DeepCopy()
	}
	return c.placeTogether(ctx, policy, spec, pod, pending, len(placed))
}

// placeTogether places every pending member in one cycle, inside one
// domain when the gang has a topology, and records them; all or none.
func (c *Coordinator) placeTogether(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, spec Spec, pod *corev1.Pod, pending []*corev1.Pod, nPlaced int) *framework.Status {
	h := c.Handle
	// try places every pending member on the nodes in; on failure nothing
	// of it is held and n says how many fitted.
	try := func(in sets.Set[string]) (n int, err error) {
		for i, m := range pending {
			if _, err := h.Place(ctx, policy, m, in); err != nil {
				for _, d := range pending[:i] {
					h.Forget(ctx, policy, d)
				}
				return i, err
			}
		}
		return len(pending), nil
	}
	total := nPlaced + len(pending)
	var where Placement
	h.Lock()
	if len(spec.Levels) == 0 {
		if n, err := try(nil); err != nil {
			h.Unlock()
			return c.wait(ctx, spec, pod, pending, fmt.Sprintf("gang %s: only %d/%d members fit, none reserved: %s", spec.Group, nPlaced+n, total, err))
		}
	} else {
		var nodes corev1.NodeList
		if err := c.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
			h.Unlock()
			return framework.AsStatus(fmt.Errorf("listing nodes: %w", err))
		}
		ptrs := make([]*corev1.Node, len(nodes.Items))
		for i := range nodes.Items {
			ptrs[i] = &nodes.Items[i]
		}
		found := false
		var best Domain
		bestN := -1
		// The narrowest level first; in each, the smallest domain first.
		for l := len(spec.Levels) - 1; l >= 0 && !found; l-- {
			for _, d := range Domains(ptrs, spec.Levels, l) {
				n, err := try(d.Nodes)
				if err == nil {
					where, found = Placement{Domain: d}, true
					break
				}
				if n > bestN {
					best, bestN = d, n
				}
			}
		}
		if !found {
			if spec.Required {
				h.Unlock()
				msg := fmt.Sprintf("gang %s: no %s domain holds %d members", spec.Group, levelsText(spec.Levels), total)
				if bestN >= 0 {
					msg += fmt.Sprintf(" (best: %s holds %d)", best, nPlaced+bestN)
				}
				return c.wait(ctx, spec, pod, pending, msg+", none reserved")
			}
			if n, err := try(nil); err != nil {
				h.Unlock()
				return c.wait(ctx, spec, pod, pending, fmt.Sprintf("gang %s: only %d/%d members fit, none reserved: %s", spec.Group, nPlaced+n, total, err))
			}
			where = Placement{Spread: true}
		}
	}
	h.Unlock()
	// Recorded together, in one group commit (one after the other, a gang
	// of 300 waited for 300 status writes, half a minute, before any
	// member could bind), and not at all when the policy's status has no
	// room for every member (recording some and taking them back wrote
	// the status twice on every retry of a gang that cannot fit).
	errs := h.RecordAll(ctx, policy, pending, c.Clock.Now())
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			first = cmp.Or(first, err)
		}
	}
	if first != nil {
		for _, d := range pending {
			h.Forget(ctx, policy, d)
		}
		if errors.Is(first, ledger.ErrStatusFull) {
			// Not an error to retry at once: the gang waits until the
			// policy's status has room for all of it, and says so.
			return c.wait(ctx, spec, pod, pending, fmt.Sprintf("gang %s: no room to record %d more reservations: %v; none reserved (see the policy's ReservationsFull condition)",
				spec.Group, len(pending), first))
		}
		return framework.AsStatus(fmt.Errorf("recording gang %s (%d of %d members failed): %w", spec.Group, failed, len(pending), first))
	}
	c.notices.drop(key(pod.Namespace, spec.Group))
	if len(spec.Levels) > 0 {
		c.placed.Store(key(pending[0].Namespace, spec.Group), where)
	}
	metrics.GangsPlaced.WithLabelValues(policy.Name, where.Level()).Inc()
	ctrl.LoggerFrom(ctx).V(2).Info("Reserved gang", "group", spec.Group, "members", len(pending), "placement", where.String())
	for _, m := range pending {
		if m.UID != pod.UID {
			h.Wake(m)
		}
	}
	return nil
}

// join places a member that arrives after its gang was placed inside the
// gang's domain, when the gang has a topology (Required: or waits;
// Preferred: or anywhere, through the caller's Reserve).
func (c *Coordinator) join(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, spec Spec, pod *corev1.Pod, placed []*corev1.Pod) *framework.Status {
	if len(spec.Levels) == 0 {
		return nil
	}
	var nodes corev1.NodeList
	if err := c.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return framework.AsStatus(fmt.Errorf("listing nodes: %w", err))
	}
	byName := make(map[string]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	d, outcome := planJoin(spec, placed, byName, func(uid types.UID) string {
		name, _, _ := c.Handle.Reserved(uid)
		return name
	})
	switch outcome {
	case joinAnywhere:
		return nil
	case joinWait:
		return c.wait(ctx, spec, pod, nil, fmt.Sprintf("gang %s: waiting to see where its members were bound", spec.Group))
	}
	in := sets.New[string]()
	for name, n := range byName {
		if d.Contains(n) {
			in.Insert(name)
		}
	}
	h := c.Handle
	h.Lock()
	_, err := h.Place(ctx, policy, pod, in)
	h.Unlock()
	if err != nil {
		if !spec.Required {
			return nil
		}
		return c.wait(ctx, spec, pod, nil, fmt.Sprintf("gang %s: does not fit in the gang's domain %s: %s", spec.Group, d, err))
	}
	if err := h.Record(ctx, policy, pod, c.Clock.Now()); err != nil {
		h.Forget(ctx, policy, pod)
		return framework.AsStatus(fmt.Errorf("recording gang member: %w", err))
	}
	ctrl.LoggerFrom(ctx).V(4).Info("Gang member joined its domain", "pod", klog.KObj(pod), "group", spec.Group, "domain", d.String())
	return nil
}

// joinOutcome is what planJoin decides for a member joining a placed gang.
type joinOutcome int

const (
	// joinInDomain: place the member inside the domain returned.
	joinInDomain joinOutcome = iota
	// joinAnywhere: a Preferred gang whose members share no domain; the
	// member goes wherever the plugins place it.
	joinAnywhere
	// joinWait: a Required gang with a member on no node known yet.
	joinWait
)

// planJoin finds the domain a gang's placed members share. A member's node
// is its spec.nodeName, else its reservation's (reservedNode, "" when it
// holds none). A member bound a moment ago may show neither (its
// reservation released, the informer behind): a Required gang then waits
// rather than take the joining pod anywhere, since the domain is not known.
func planJoin(spec Spec, placed []*corev1.Pod, byName map[string]*corev1.Node, reservedNode func(types.UID) string) (Domain, joinOutcome) {
	var at []*corev1.Node
	for _, m := range placed {
		name := m.Spec.NodeName
		if name == "" {
			name = reservedNode(m.UID)
		}
		if n, ok := byName[name]; ok {
			at = append(at, n)
		}
	}
	if len(at) < len(placed) && spec.Required {
		return Domain{}, joinWait
	}
	d, ok := Shared(at, spec.Levels)
	if !ok {
		return Domain{}, joinAnywhere
	}
	return d, joinInDomain
}

// wait tells why the gang waits: the pod in its cycle alone at once when
// members is empty (a message about that pod), else every member given
// (the gang's unplaced ones, the pod among them) through the gang's
// notices: after noticeGrace the first time, then at once or at the end
// of the notice interval when they were told a moment ago (the latest
// message then; nothing when the gang was placed meanwhile). The caller
// holds the gang's lock when it gives members.
func (c *Coordinator) wait(ctx context.Context, spec Spec, pod *corev1.Pod, members []*corev1.Pod, msg string) *framework.Status {
	full := spec.Condition + ": " + msg
	if len(members) == 0 {
		c.Handle.Waiting(ctx, pod, full)
		return framework.NewStatus(framework.Unschedulable, msg)
	}
	if !slices.ContainsFunc(members, func(m *corev1.Pod) bool { return m.UID == pod.UID }) {
		members = append(slices.Clip(members), pod)
	}
	k := key(pod.Namespace, spec.Group)
	tellNow, arm := c.notices.note(k, c.Clock.Now(), full, members)
	switch {
	case tellNow:
		for _, m := range members {
			c.Handle.Waiting(ctx, m, full)
		}
	case arm > 0:
		after := c.AfterFunc
		if after == nil {
			after = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
		}
		after(arm, func() { c.flush(ctx, k) })
	}
	return framework.NewStatus(framework.Unschedulable, msg)
}

// flush tells a gang's members what wait held back for them.
func (c *Coordinator) flush(ctx context.Context, k string) {
	mu := c.lock(k)
	mu.Lock()
	defer mu.Unlock()
	msg, members := c.notices.take(k, c.Clock.Now())
	for _, m := range members {
		if ctx.Err() != nil {
			return
		}
		c.Handle.Waiting(ctx, m, msg)
	}
}

// Release releases, together with pod, the reservations every other
// unbound member of its gang holds under policy: a gang times out as a
// whole, so no member keeps capacity the others can no longer use.
func (c *Coordinator) Release(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod) {
	spec, ok, err := c.spec(ctx, policy, pod)
	if err != nil || !ok {
		return
	}
	mu := c.lock(key(pod.Namespace, spec.Group))
	mu.Lock()
	defer mu.Unlock()
	c.placed.Delete(key(pod.Namespace, spec.Group))
	items, err := c.members(ctx, pod.Namespace, spec)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the gang to release it", "group", spec.Group)
		return
	}
	for i := range items {
		m := &items[i]
		if m.UID == pod.UID || m.Spec.NodeName != "" {
			continue
		}
		if _, p, held := c.Handle.Reserved(m.UID); held && p == policy.Name {
			c.Handle.ReleaseMember(ctx, policy, m, fmt.Sprintf("released with gang %s: the permit wait of %s timed out", spec.Group, pod.Name))
		}
	}
}

// MemberGone is told that pod, a member holding a reservation under the
// policy named policyName, was deleted before it was bound: the other
// members are woken, so that each checks its gang (Check) in its own cycle.
func (c *Coordinator) MemberGone(ctx context.Context, policyName string, pod *corev1.Pod) {
	group := groupOf(pod)
	if group == "" {
		return
	}
	items, err := c.members(ctx, pod.Namespace, Spec{Group: group, PodGroup: c.podGroupName(pod) != ""}, client.UnsafeDisableDeepCopy)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the gang of a deleted member", "group", group)
		return
	}
	for i := range items {
		m := &items[i]
		if _, p, ok := c.Handle.Reserved(m.UID); ok && p == policyName && m.UID != pod.UID {
			c.Handle.Wake(m)
		}
	}
}

// Check is run for a member that holds a reservation taken in an earlier
// cycle (it waited): while no member of its gang runs (is bound), a gang
// left with fewer than minMember placed members (one was deleted) cannot go
// on, and must not keep capacity meanwhile: Unschedulable asks the caller
// to release the pod's reservation; its next cycle says why it waits.
func (c *Coordinator) Check(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod) *framework.Status {
	spec, ok, err := c.spec(ctx, policy, pod)
	if err != nil || !ok {
		return nil // a PodGroup deleted under a placed gang: let it go on
	}
	mu := c.lock(key(pod.Namespace, spec.Group))
	mu.Lock()
	defer mu.Unlock()
	// Read only (every waiting member checks its whole gang: no copies).
	items, err := c.members(ctx, pod.Namespace, spec, client.UnsafeDisableDeepCopy)
	if err != nil {
		return framework.AsStatus(err)
	}
	// Counted under the placement lock: a member whose reservation is
	// checked again before its bind (the scheduler's PreBind check) is out
	// of the cache for a moment under that lock, and must not be seen
	// missing (the gang was released, and its members placed again outside
	// its topology domain).
	c.Handle.Lock()
	defer c.Handle.Unlock()
	placed := 0
	for i := range items {
		m := &items[i]
		if m.Spec.NodeName != "" || c.Handle.RecentlyBound(m.UID) {
			return nil // the gang runs already
		}
		if m.DeletionTimestamp != nil {
			continue
		}
		if _, p, ok := c.Handle.Reserved(m.UID); ok && p == policy.Name {
			placed++
		}
	}
	if placed >= spec.MinMember {
		return nil
	}
	c.placed.Delete(key(pod.Namespace, spec.Group))
	return framework.NewStatus(framework.Unschedulable, fmt.Sprintf("gang %s: %d/%d members placed, releasing", spec.Group, placed, spec.MinMember))
}
