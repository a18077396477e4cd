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
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/framework"
)

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
		c.nodeLabels++
	} else {
		c.sched.UpdateNode(c.logger, nt.node, node)
		if !maps.Equal(nt.node.Labels, node.Labels) {
			c.nodeLabels++
		}
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
	c.nodeLabels++
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
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

// DeletePod forgets a pod and any reservation it held, and remembers that
// it was deleted (Reserve and AddRecorded refuse it from now on).
func (c *Cache) DeletePod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok {
		c.drop(uid, e)
	}
	c.deleted[uid] = c.clock.Now()
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
