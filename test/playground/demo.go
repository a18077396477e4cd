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

package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// ApprovedAnnotation is what the manual-approval sample policy waits for.
const ApprovedAnnotation = bindgatev1alpha1.Prefix + "approved"

type demo struct {
	p *playground
}

func gatedPod(ns, name string, labels map[string]string, cpu, mem string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}},
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
				}},
			}},
		},
	}
}

func tolerateBatch(p *corev1.Pod) *corev1.Pod {
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{
		Key: taintKey, Operator: corev1.TolerationOpEqual, Value: batchPool, Effect: corev1.TaintEffectNoSchedule,
	})
	return p
}

// create makes the demo namespaces and pods.
func (d *demo) create(ctx context.Context) error {
	cs := d.p.cs
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: batchNamespace, Labels: map[string]string{"team": "batch"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}},
	} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	pods := make([]*corev1.Pod, 0, d.p.opts.pods+2)
	for i := range d.p.opts.pods {
		pods = append(pods, tolerateBatch(gatedPod(batchNamespace, fmt.Sprintf("worker-%02d", i+1),
			map[string]string{"app": "worker"}, "500m", "1Gi")))
	}
	for i := range gangSize - 1 {
		pods = append(pods, gangPod(i))
	}
	pods = append(pods,
		gatedPod(demoNamespace, approvalPod, map[string]string{"needs-approval": "true"}, "250m", "256Mi"),
		tolerateBatch(gatedPod(batchNamespace, unfitPod, map[string]string{"app": "too-big"}, "12", "1Gi")),
	)
	for _, pod := range pods {
		if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	d.p.step("created namespace %s (team=batch) with %d gated pods (500m CPU, 1Gi each) -> policy batch-pool, pool=batch nodes", batchNamespace, d.p.opts.pods)
	d.p.step("created %s/%s (needs-approval=true) -> policy manual-approval: waits for an annotation", demoNamespace, approvalPod)
	d.p.step("created %s/%s requesting 12 CPUs (nodes have 8) -> cannot fit anywhere", batchNamespace, unfitPod)
	d.p.step("created %d of %d members of gang %s (label %s) -> policy training-gangs: none is reserved until all %d can be",
		gangSize-1, gangSize, gangGroup, bindgatev1alpha1.GroupLabel, gangSize)
	return nil
}

// wait waits until the batch pods run on batch nodes, the approval pod waits
// in Permit, and the unfit pod has a FailedScheduling event, printing each
// as it happens.
func (d *demo) wait(ctx context.Context) error {
	cs := d.p.cs
	nodePool := map[string]string{}
	running, approvalWaiting, unfitReported, gangWaiting := -1, false, false, false
	return poll(ctx, 250*time.Millisecond, func() (bool, error) {
		pods, err := cs.CoreV1().Pods(batchNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=worker"})
		if err != nil {
			return false, nil //nolint:nilerr // transient; retry until the deadline
		}
		n := 0
		for i := range pods.Items {
			pod := &pods.Items[i]
			if !podReady(pod) {
				continue
			}
			pool, ok := nodePool[pod.Spec.NodeName]
			if !ok {
				node, err := cs.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
				if err != nil {
					return false, nil //nolint:nilerr // retry
				}
				pool = node.Labels[poolLabel]
				nodePool[pod.Spec.NodeName] = pool
			}
			if pool != batchPool {
				return false, fmt.Errorf("pod %s/%s was bound to %s in pool %q; the batch-pool policy allows only pool=batch", pod.Namespace, pod.Name, pod.Spec.NodeName, pool)
			}
			n++
		}
		if n != running {
			running = n
			d.p.step("batch pods bound by policy batch-pool and Running (kwok): %d/%d", n, d.p.opts.pods)
		}

		if !approvalWaiting {
			pod, err := cs.CoreV1().Pods(demoNamespace).Get(ctx, approvalPod, metav1.GetOptions{})
			if err == nil {
				for _, c := range pod.Status.Conditions {
					if c.Type == bindgatev1alpha1.PodConditionPermitted && c.Status == corev1.ConditionFalse && c.Reason == bindgatev1alpha1.ReasonWaiting {
						approvalWaiting = true
						d.p.step("%s/%s is waiting in Permit (condition %s=False, reason %s): %s",
							demoNamespace, approvalPod, c.Type, c.Reason, c.Message)
					}
				}
			}
		}

		if !unfitReported {
			evs, err := cs.CoreV1().Events(batchNamespace).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.name=" + unfitPod + ",reason=FailedScheduling",
			})
			if err == nil && len(evs.Items) > 0 {
				unfitReported = true
				d.p.step("%s/%s cannot fit; FailedScheduling: %s", batchNamespace, unfitPod, evs.Items[0].Message)
			}
		}
		if !gangWaiting {
			pod, err := cs.CoreV1().Pods(demoNamespace).Get(ctx, gangPodName(0), metav1.GetOptions{})
			if err == nil {
				for _, c := range pod.Status.Conditions {
					// Report once the operator has seen every member created
					// so far: its first answer may predate the last of them.
					if c.Type == bindgatev1alpha1.PodConditionPermitted && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "gang "+gangGroup) &&
						strings.Contains(c.Message, fmt.Sprintf("%d/%d members exist", gangSize-1, gangSize)) {
						gangWaiting = true
						d.p.step("gang %s waits for its last member (%s/%s: %s)", gangGroup, demoNamespace, pod.Name, c.Message)
					}
				}
			}
		}
		return running == d.p.opts.pods && approvalWaiting && unfitReported && gangWaiting, nil
	})
}

func gangPodName(i int) string { return fmt.Sprintf("%s-%d", gangGroup, i) }

// gangPod is member i of the demo gang, on the training-gangs policy.
func gangPod(i int) *corev1.Pod {
	return gatedPod(demoNamespace, gangPodName(i), map[string]string{
		bindgatev1alpha1.GroupLabel: gangGroup, bindgatev1alpha1.PolicyLabel: "training-gangs",
	}, "1", "2Gi")
}

// completeGang creates the gang's last member and waits until all members
// are bound and Running.
func (d *demo) completeGang(ctx context.Context) error {
	d.p.step("the last member of gang %s arrives: %s/%s", gangGroup, demoNamespace, gangPodName(gangSize-1))
	if _, err := d.p.cs.CoreV1().Pods(demoNamespace).Create(ctx, gangPod(gangSize-1), metav1.CreateOptions{}); err != nil {
		return err
	}
	return poll(ctx, 250*time.Millisecond, func() (bool, error) {
		pods, err := d.p.cs.CoreV1().Pods(demoNamespace).List(ctx, metav1.ListOptions{LabelSelector: bindgatev1alpha1.GroupLabel + "=" + gangGroup})
		if err != nil {
			return false, nil //nolint:nilerr // transient; retry until the deadline
		}
		running := 0
		var nodes []string
		where := ""
		for i := range pods.Items {
			if podReady(&pods.Items[i]) {
				running++
				nodes = append(nodes, pods.Items[i].Spec.NodeName)
			}
			for _, c := range pods.Items[i].Status.Conditions {
				// The gang condition says where the gang was placed.
				if c.Type == bindgatev1alpha1.PodConditionPermitted && c.Status == corev1.ConditionTrue {
					if _, after, ok := strings.Cut(c.Message, "placed in "); ok {
						where = " (topology: one zone, " + after + ")"
					}
				}
			}
		}
		if running == gangSize {
			sort.Strings(nodes)
			d.p.step("gang %s: all %d members bound together and Running on %s%s", gangGroup, gangSize, strings.Join(nodes, ", "), where)
			return true, nil
		}
		return false, nil
	})
}

// approve annotates the approval pod as a user would with kubectl annotate.
func (d *demo) approve(ctx context.Context) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, ApprovedAnnotation)
	_, err := d.p.cs.CoreV1().Pods(demoNamespace).Patch(ctx, approvalPod, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// waitApprovedBound waits until the approval pod is bound and Running and
// returns its node.
func (d *demo) waitApprovedBound(ctx context.Context) (string, error) {
	var node string
	err := poll(ctx, 250*time.Millisecond, func() (bool, error) {
		pod, err := d.p.cs.CoreV1().Pods(demoNamespace).Get(ctx, approvalPod, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retry
		}
		node = pod.Spec.NodeName
		return podReady(pod), nil
	})
	return node, err
}

// watchApproval prints when the user's annotate releases the approval pod.
func (d *demo) watchApproval(ctx context.Context) {
	node, err := d.waitApprovedBound(ctx)
	if err == nil {
		d.p.step("approved pod bound to %s and Running", node)
	}
}
