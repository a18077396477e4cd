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
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/bindgate/bindgate/internal/framework"
)

// Workload kinds beyond plain pods, after kube-scheduler's scheduler_perf
// suite (SchedulingPodAntiAffinity, TopologySpreading).
const (
	KindPlain = ""
	// KindAntiAffinity: pods in antiAffinityGroups groups, each pod
	// required anti-affine on hostname to its own group.
	KindAntiAffinity = "antiaffinity"
	// KindSpread: every pod spread over zones (maxSkew 1, DoNotSchedule).
	KindSpread = "spread"
)

const antiAffinityGroups = 4

// UngateKubeScheduler is the path a user of scheduling gates has today
// without bindgate: a controller lifts the gate (32 workers, as fast as the
// API server allows, as Kueue's ungating does), then kube-scheduler binds.
const UngateKubeScheduler = "ungate+kube-scheduler"

// foreignGate is the gate the ungating controller lifts.
const foreignGate = "bench.example.com/queue"

// zoneOf is node i's zone: nodes are spread over 3 zones.
func zoneOf(i int) string { return fmt.Sprintf("zone-%d", i%3) }

// shape gives pod i the constraints of the workload's kind.
func shape(p *corev1.Pod, i int, kind string) {
	switch kind {
	case KindAntiAffinity:
		group := fmt.Sprintf("g%d", i%antiAffinityGroups)
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels["group"] = group
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"group": group}},
				TopologyKey:   corev1.LabelHostname,
			}},
		}}
	case KindSpread:
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels["app"] = "spread"
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
		}}
	}
}

// ungate lifts foreignGate from every pod that has it, with 32 workers.
func ungate(ctx context.Context, cs kubernetes.Interface) {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "ungate"})
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("bench"))
	inf := f.Core().V1().Pods().Informer()
	enqueue := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && hasGate(p, foreignGate) {
			q.Add(p.Name)
		}
	}
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }})
	f.Start(ctx.Done())
	go func() { <-ctx.Done(); q.ShutDown() }()
	for range 32 {
		go func() {
			for {
				name, quit := q.Get()
				if quit {
					return
				}
				obj, exists, err := inf.GetIndexer().GetByKey("bench/" + name)
				if err == nil && exists {
					p := obj.(*corev1.Pod).DeepCopy()
					if hasGate(p, foreignGate) {
						p.Spec.SchedulingGates = slices.DeleteFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == foreignGate })
						if _, err := cs.CoreV1().Pods("bench").Update(ctx, p, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
							q.AddRateLimited(name)
						}
					}
				}
				q.Done(name)
			}
		}()
	}
}

func hasGate(p *corev1.Pod, name string) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == name })
}

// checkPlacement checks the final placement: no node overcommitted, and the
// workload's own constraint held (anti-affine groups on distinct nodes, zone
// skew at most 1). It returns "" when the placement is correct.
func checkPlacement(ctx context.Context, cs kubernetes.Interface, kind string) string {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	pods, err := cs.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	zone := map[string]string{}
	alloc := map[string]*framework.Resource{}
	for _, n := range nodes.Items {
		zone[n.Name] = n.Labels[corev1.LabelTopologyZone]
		alloc[n.Name] = framework.NewResource(n.Status.Allocatable)
	}
	used := map[string]*framework.Resource{}
	count := map[string]int64{}
	groupNodes := map[string]bool{}
	perZone := map[string]int{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" {
			continue
		}
		if used[p.Spec.NodeName] == nil {
			used[p.Spec.NodeName] = &framework.Resource{}
		}
		used[p.Spec.NodeName].AddResource(framework.PodRequests(p), 1)
		count[p.Spec.NodeName]++
		switch kind {
		case KindAntiAffinity:
			key := p.Labels["group"] + "@" + p.Spec.NodeName
			if groupNodes[key] {
				return fmt.Sprintf("two pods of anti-affine group %s on node %s", p.Labels["group"], p.Spec.NodeName)
			}
			groupNodes[key] = true
		case KindSpread:
			perZone[zone[p.Spec.NodeName]]++
		}
	}
	for n, u := range used {
		a := alloc[n]
		if a == nil {
			return fmt.Sprintf("pod bound to unknown node %s", n)
		}
		if u.MilliCPU > a.MilliCPU || u.Memory > a.Memory || count[n] > a.AllowedPodNumber {
			return fmt.Sprintf("node %s overcommitted", n)
		}
	}
	if kind == KindSpread && len(perZone) > 0 {
		var c []int
		for _, v := range perZone {
			c = append(c, v)
		}
		sort.Ints(c)
		if len(perZone) < 3 || c[len(c)-1]-c[0] > 1 {
			return fmt.Sprintf("zone skew above 1: %v", perZone)
		}
	}
	return ""
}
