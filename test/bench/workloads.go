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
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
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
	// KindGang: gangs of gangSize pods of 16 CPU (two per node) under a
	// policy with a gang condition; bindgate only.
	KindGang = "gang"
	// KindGangRack: the same gangs, each required inside one rack.
	KindGangRack = "gang-rack"
	// KindPodGroup: the same gangs as upstream PodGroups (the Workload API,
	// scheduling.k8s.io/v1beta1, minCount gangSize): kube-scheduler
	// schedules them with its GangScheduling plugin (feature
	// GenericWorkload), bindgate as gangs without a gang condition.
	KindPodGroup = "podgroup"
	// KindPodGroupRack: the same PodGroups, each constrained to one rack
	// (schedulingConstraints.topology; kube-scheduler's TopologyAware
	// plugins, feature TopologyAwareWorkloadScheduling).
	KindPodGroupRack = "podgroup-rack"
)

// gangSize is the members per gang of the gang workloads; nodesPerRack
// nodes share a rackLabel value.
const (
	gangSize     = 8
	nodesPerRack = 16
	rackLabel    = "bench.example.com/rack"
)

func rackOf(i int) string { return fmt.Sprintf("rack-%02d", i/nodesPerRack) }

func isGang(kind string) bool { return isLabelGang(kind) || isPodGroup(kind) }

// isLabelGang says whether the workload's gangs are bindgate's own (the
// group label and a policy gang condition; kube-scheduler has no such
// gangs).
func isLabelGang(kind string) bool { return kind == KindGang || kind == KindGangRack }

// isPodGroup says whether the workload's gangs are upstream PodGroups.
func isPodGroup(kind string) bool { return kind == KindPodGroup || kind == KindPodGroupRack }

// rackRequired says whether every gang of the workload must sit in one rack.
func rackRequired(kind string) bool { return kind == KindGangRack || kind == KindPodGroupRack }

// podGroupFeatures are the feature gates the PodGroup workloads turn on in
// kube-apiserver and kube-scheduler (both off by default in v1.37).
const podGroupFeatures = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"

// gangName is the gang (label value or PodGroup name) of pod i.
func gangName(i int) string { return fmt.Sprintf("gang-%04d", i/gangSize) }

// createPodGroups creates the PodGroups of a PodGroup workload of pods pods.
func createPodGroups(ctx context.Context, cs kubernetes.Interface, pods int, kind string) error {
	return parallel((pods+gangSize-1)/gangSize, 16, func(g int) error {
		pg := &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: gangName(g * gangSize)},
			Spec: schedulingv1beta1.PodGroupSpec{
				SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: gangSize}},
			},
		}
		if kind == KindPodGroupRack {
			pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{
				Topology: []schedulingv1beta1.TopologyConstraint{{Key: rackLabel}},
			}
		}
		got, err := cs.SchedulingV1beta1().PodGroups("bench").Create(ctx, pg, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if kind == KindPodGroupRack && got.Spec.SchedulingConstraints == nil {
			return fmt.Errorf("the API server dropped PodGroup %s's schedulingConstraints (feature TopologyAwareWorkloadScheduling off?)", got.Name)
		}
		return nil
	})
}

// gangPermit is the bench policy's permit section for a gang workload.
func gangPermit(kind string) *bindgatev1alpha1.Permit {
	g := &bindgatev1alpha1.GangCondition{MinMember: gangSize}
	if kind == KindGangRack {
		g.Topology = &bindgatev1alpha1.GangTopology{Key: rackLabel}
	}
	return &bindgatev1alpha1.Permit{
		Timeout:    &metav1.Duration{Duration: 10 * time.Minute},
		Conditions: []bindgatev1alpha1.PermitCondition{{Name: "gang", Gang: g}},
	}
}

// gangStats returns how many gangs are fully bound and how many of those
// sit inside one rack.
func gangStats(pods []corev1.Pod, rack map[string]string) (complete, oneRack int) {
	nodes := map[string][]string{}
	for _, p := range pods {
		g := p.Labels[bindgatev1alpha1.GroupLabel]
		if p.Spec.SchedulingGroup != nil && p.Spec.SchedulingGroup.PodGroupName != nil {
			g = *p.Spec.SchedulingGroup.PodGroupName
		}
		if g != "" && p.Spec.NodeName != "" {
			nodes[g] = append(nodes[g], p.Spec.NodeName)
		}
	}
	for _, ns := range nodes {
		if len(ns) < gangSize {
			continue
		}
		complete++
		racks := map[string]bool{}
		for _, n := range ns {
			racks[rack[n]] = true
		}
		if len(racks) == 1 {
			oneRack++
		}
	}
	return complete, oneRack
}

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
	case KindGang, KindGangRack:
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[bindgatev1alpha1.GroupLabel] = gangName(i)
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("16")
	case KindPodGroup, KindPodGroupRack:
		name := gangName(i)
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("16")
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
func ungate(ctx context.Context, cs kubernetes.Interface, lifted *atomic.Int64) {
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
						if _, err := cs.CoreV1().Pods("bench").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
							if ctx.Err() == nil {
								q.AddRateLimited(name)
							}
						} else {
							lifted.Add(1)
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

// checkPlacementGangs checks the final placement: no node overcommitted, and
// the workload's own constraint held (anti-affine groups on distinct nodes,
// zone skew at most 1, gangs bound whole, inside one rack when required). It
// returns "" when the placement is correct, else the first breach, and for
// the gang workloads the fraction of whole gangs inside one rack.
func checkPlacementGangs(ctx context.Context, cs kubernetes.Interface, kind string) (string, float64) {
	var frac float64
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error(), frac
	}
	pods, err := cs.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error(), frac
	}
	zone := map[string]string{}
	rack := map[string]string{}
	alloc := map[string]*framework.Resource{}
	for _, n := range nodes.Items {
		zone[n.Name] = n.Labels[corev1.LabelTopologyZone]
		rack[n.Name] = n.Labels[rackLabel]
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
				return fmt.Sprintf("two pods of anti-affine group %s on node %s", p.Labels["group"], p.Spec.NodeName), frac
			}
			groupNodes[key] = true
		case KindSpread:
			perZone[zone[p.Spec.NodeName]]++
		}
	}
	for n, u := range used {
		a := alloc[n]
		if a == nil {
			return fmt.Sprintf("pod bound to unknown node %s", n), frac
		}
		if u.MilliCPU > a.MilliCPU || u.Memory > a.Memory || count[n] > a.AllowedPodNumber {
			return fmt.Sprintf("node %s overcommitted", n), frac
		}
	}
	if kind == KindSpread && len(perZone) > 0 {
		var c []int
		for _, v := range perZone {
			c = append(c, v)
		}
		sort.Ints(c)
		if len(perZone) < 3 || c[len(c)-1]-c[0] > 1 {
			return fmt.Sprintf("zone skew above 1: %v", perZone), frac
		}
	}
	if isGang(kind) {
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		complete, oneRack := gangStats(pods.Items, rack)
		if complete > 0 {
			frac = float64(oneRack) / float64(complete)
		}
		if complete*gangSize != bound {
			return fmt.Sprintf("%d pods bound but only %d whole gangs of %d: a gang bound in part", bound, complete, gangSize), frac
		}
		if rackRequired(kind) && oneRack != complete {
			return fmt.Sprintf("%d of %d gangs span racks under a Required rack topology", complete-oneRack, complete), frac
		}
	}
	return "", frac
}
