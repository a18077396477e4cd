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

package cache

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/metrics"
)

// releasedGrace is how long a released reservation whose pod was bound stays
// counted while the informer catches up with the bind.
const releasedGrace = 30 * time.Second

// ErrBound means the pod is bound (or was bound by this process a moment ago
// and the informer has not caught up yet).
var ErrBound = errors.New("the pod is already bound")

// ErrDeleted means the informer showed the pod deleted: a cycle that read it
// before must not reserve capacity for it (nothing would release it).
var ErrDeleted = errors.New("the pod was deleted")

// ErrRecorded means the pod is held by a reservation counted from a
// policy's status (another replica's record): this process must not take it
// as its own (its failure would release the other's record, and the other
// may be binding the pod). The pod's next cycle goes on from that
// reservation.
var ErrRecorded = errors.New("the pod is held by a recorded reservation")

// UnfitError says why a reservation could not be taken.
type UnfitError struct{ Reasons []string }

func (e *UnfitError) Error() string { return strings.Join(e.Reasons, ", ") }

// Reserve assumes pod on node: from now on every plugin sees it there. Under
// the lock it refuses a reservation that would overcommit the node or take
// the policy past its capacity. reservedAt zero means now. A pod whose
// spec.nodeName is already node is kept as it is (the caller must not
// change it afterwards, as kube-scheduler's AssumePod asks); any other is
// copied with spec.nodeName set.
func (c *Cache) Reserve(pod *corev1.Pod, req *framework.Resource, node string, policy *bindgatev1alpha1.BindingPolicy, reservedAt time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, gone := c.deleted[pod.UID]; gone {
		return fmt.Errorf("pod %s: %w", klog.KObj(pod), ErrDeleted)
	}
	if e, ok := c.pods[pod.UID]; ok && e.counted() {
		if !e.reserved {
			return fmt.Errorf("pod %s was bound to node %s: %w", klog.KObj(pod), e.node, ErrBound)
		}
		if e.recorded {
			return fmt.Errorf("pod %s on node %s: %w", klog.KObj(pod), e.node, ErrRecorded)
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
	assumed := pod
	if pod.Spec.NodeName != node {
		assumed = pod.DeepCopy()
		assumed.Spec.NodeName = node
	}
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
		alloc := nt.allocatable.Scalar[name]
		if alloc == 0 {
			// Not advertised by the node: kube-scheduler's Filter passed
			// the pod only because a DeviceClass backs the resource, and
			// NodeResourcesFit leaves it to DynamicResources, which holds
			// the device for the pod (DRA extended resources).
			continue
		}
		short(name, req.Scalar[name], nt.requested.Scalar[name], alloc)
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
// reservation not counted yet. The record of a pod the informer showed
// deleted is void, and so is that of a pod the informer shows bound, or
// known bound (see entry.knownBound) to another node: it is not counted,
// and void says so (the caller releases it). A bound pod never needs its
// reservation again, and such a record may have no one left to release it
// (a replica that placed the pod too and recorded it after the other's
// bind and release; a binder gone before its release): it would hold that
// node's capacity until the policy is deleted. The record of this
// process's own bind, not shown by the informer yet, is left to the
// release already under way.
func (c *Cache) AddRecorded(policy string, r *bindgatev1alpha1.Reservation, lookup func(*bindgatev1alpha1.Reservation) *corev1.Pod) (void bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, gone := c.deleted[r.PodUID]; gone {
		return true
	}
	if e, ok := c.pods[r.PodUID]; ok && e.counted() {
		return e.bound || (e.knownBound() && e.node != r.Node)
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
		return false
	}
	e := &entry{
		pod: assumed, node: r.Node, policy: policy, req: framework.NewResource(r.Resources),
		reserved: true, reservedAt: r.ReservedAt.Time, recorded: true,
	}
	c.pods[r.PodUID] = e
	c.account(e, 1)
	return false
}

// MarkRecorded marks the pod's reservation as counted from a policy's
// status (see Reservation.Recorded): one dropped and taken again, as it
// was, to check its node.
func (c *Cache) MarkRecorded(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok && e.reserved && !e.bound {
		e.recorded = true
	}
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
// confirmed within the grace period, and forgets the UIDs of pods deleted
// longer than deletedMemory ago.
func (c *Cache) ExpireReleased() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for uid, e := range c.pods {
		if !e.releasedAt.IsZero() && !e.bound && !e.reserved && now.Sub(e.releasedAt) > releasedGrace {
			c.drop(uid, e)
		}
	}
	for uid, at := range c.deleted {
		if now.Sub(at) > deletedMemory {
			delete(c.deleted, uid)
		}
	}
}

func metaFor(r *bindgatev1alpha1.Reservation) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: r.PodNamespace, Name: r.PodName, UID: r.PodUID}
}
