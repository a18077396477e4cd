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

package invariants

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// Expect says what the final state must be.
type Expect struct {
	// AllBound: capacity suffices, every pod of the namespaces must end
	// bound (stronger than Outcome).
	AllBound bool
	// Settle bounds the wait for pods to settle and reservations to be
	// released.
	Settle time.Duration
	// PostBindHook, when set, is the name of a PostBind hook every bound
	// pod's policy has, and Delivered returns the ids the receiver got per
	// subject (namespace/name).
	PostBindHook string
	Delivered    func() map[string][]string
	// SkipConstraints leaves out the kube-scheduler Filter re-check (for
	// pods bound by others).
	SkipConstraints bool
}

// Final checks the end state: it waits up to exp.Settle for the pods to
// settle, the reservations to be released and the notices to arrive, then
// records what is still wrong.
func (ch *Checker) Final(ctx context.Context, exp Expect) error {
	if exp.Settle <= 0 {
		exp.Settle = 2 * time.Minute
	}
	deadline := time.Now().Add(exp.Settle)
	var pods []corev1.Pod
	var problems []Violation
	for {
		var err error
		pods, err = ch.listPods(ctx)
		if err != nil {
			return err
		}
		problems = ch.settleProblems(ctx, pods, exp)
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	var policies bindgatev1alpha1.BindingPolicyList
	if err := ch.c.List(ctx, &policies); err != nil {
		return fmt.Errorf("listing policies: %w", err)
	}
	ch.mu.Lock()
	for i := range pods {
		ch.check(Outcome)
		if exp.AllBound {
			ch.check(AllBound)
		}
		if exp.PostBindHook != "" && pods[i].Spec.NodeName != "" {
			ch.check(PostBind)
		}
	}
	for _, p := range policies.Items {
		ch.check(PolicyStatus)
		for range p.Status.Reservations {
			ch.check(Reservations)
		}
	}
	// Every pod's reservation, held or not, was looked for.
	for range pods {
		ch.check(Reservations)
	}
	ch.violations = append(ch.violations, problems...)
	ch.mu.Unlock()

	ch.checkSelectors(pods)
	if !exp.SkipConstraints {
		breaches, err := Recheck(ctx, ch.cs, ch.c, pods)
		if err != nil {
			return err
		}
		ch.mu.Lock()
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				ch.check(Constraints)
			}
		}
		for _, b := range breaches {
			ch.violate(Constraints, b.Message, "pod "+b.Pod, "node "+b.Node)
		}
		ch.mu.Unlock()
	}
	return nil
}

func (ch *Checker) listPods(ctx context.Context) ([]corev1.Pod, error) {
	var out []corev1.Pod
	if len(ch.nss) == 0 {
		var list corev1.PodList
		if err := ch.c.List(ctx, &list); err != nil {
			return nil, fmt.Errorf("listing pods: %w", err)
		}
		return list.Items, nil
	}
	for ns := range ch.nss {
		var list corev1.PodList
		if err := ch.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing pods of %s: %w", ns, err)
		}
		out = append(out, list.Items...)
	}
	return out, nil
}

// settleProblems lists what is not settled yet: pods without an outcome,
// reservations not released, policies not converged, notices missing.
func (ch *Checker) settleProblems(ctx context.Context, pods []corev1.Pod, exp Expect) []Violation {
	var out []Violation
	add := func(inv, detail string, objs ...string) {
		out = append(out, Violation{Invariant: inv, Detail: detail, Objects: objs, At: time.Now()})
	}
	byUID := map[types.UID]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		byUID[p.UID] = p
		if p.Spec.NodeName != "" {
			continue
		}
		if exp.AllBound {
			add(AllBound, "not bound; conditions: "+conditions(p), podKey(p))
			continue
		}
		if !hasReason(p) {
			add(Outcome, "neither bound nor carrying a condition with a reason; gates: "+gates(p), podKey(p))
		}
	}
	var policies bindgatev1alpha1.BindingPolicyList
	if err := ch.c.List(ctx, &policies); err != nil {
		add(PolicyStatus, "listing policies: "+err.Error())
		return out
	}
	for _, pol := range policies.Items {
		if pol.DeletionTimestamp != nil {
			continue
		}
		if pol.Status.ObservedGeneration != pol.Generation {
			add(PolicyStatus, fmt.Sprintf("observedGeneration %d, generation %d", pol.Status.ObservedGeneration, pol.Generation), "policy "+pol.Name)
		}
		for _, r := range pol.Status.Reservations {
			if len(ch.nss) > 0 && !ch.nss[r.PodNamespace] {
				continue
			}
			p, ok := byUID[r.PodUID]
			switch {
			case !ok:
				add(Reservations, "held for a pod that is gone", "policy "+pol.Name, "pod "+r.PodNamespace+"/"+r.PodName, "node "+r.Node)
			case p.Spec.NodeName != "":
				add(Reservations, "held for a pod bound to "+p.Spec.NodeName, "policy "+pol.Name, podKey(p), "node "+r.Node)
			}
		}
	}
	if exp.PostBindHook != "" && exp.Delivered != nil {
		got := exp.Delivered()
		for i := range pods {
			p := &pods[i]
			if p.Spec.NodeName == "" || p.Annotations[bindgatev1alpha1.PolicyAnnotation] == "" {
				continue
			}
			ids := got[p.Namespace+"/"+p.Name]
			distinct := map[string]bool{}
			for _, id := range ids {
				distinct[id] = true
			}
			switch {
			case len(ids) == 0:
				add(PostBind, "no notice delivered; annotations: "+postbindAnnotations(p), podKey(p))
			case len(distinct) > 1:
				add(PostBind, fmt.Sprintf("notices with %d different ids: %v", len(distinct), ids), podKey(p))
			}
		}
	}
	return out
}

func hasReason(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		switch c.Type {
		case corev1.PodScheduled, bindgatev1alpha1.PodConditionPolicyMatched, bindgatev1alpha1.PodConditionPermitted:
			// SchedulingGated is the API server's, not an outcome.
			if c.Status == corev1.ConditionFalse && c.Reason != "" && c.Reason != corev1.PodReasonSchedulingGated {
				return true
			}
		}
	}
	return false
}

func conditions(p *corev1.Pod) string {
	var parts []string
	for _, c := range p.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func gates(p *corev1.Pod) string {
	var parts []string
	for _, g := range p.Spec.SchedulingGates {
		parts = append(parts, g.Name)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func postbindAnnotations(p *corev1.Pod) string {
	var parts []string
	for k, v := range p.Annotations {
		if strings.Contains(k, "postbind") {
			parts = append(parts, k+"="+v)
		}
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

// checkSelectors checks every bound pod's node against the nodeSelector of
// the policy that bound it (as last seen, so a policy edited or deleted
// afterwards is judged by the spec it had).
func (ch *Checker) checkSelectors(pods []corev1.Pod) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for i := range pods {
		p := &pods[i]
		name := p.Annotations[bindgatev1alpha1.PolicyAnnotation]
		if p.Spec.NodeName == "" || name == "" {
			continue
		}
		pol, ok := ch.policies[name]
		n, nok := ch.nodes[p.Spec.NodeName]
		if !ok || !nok || pol.Spec.NodeSelector == nil {
			continue
		}
		ch.check(PolicyNodeSelector)
		sel, err := metav1.LabelSelectorAsSelector(pol.Spec.NodeSelector)
		if err != nil {
			continue
		}
		if !sel.Matches(labels.Set(n.Labels)) {
			ch.violate(PolicyNodeSelector, fmt.Sprintf("node labels %v do not match the policy's nodeSelector %s", n.Labels, sel), podKey(p), "node "+n.Name, "policy "+name)
		}
	}
}

// Process is one sample of the operator process.
type Process struct {
	Goroutines int
	RSS        int64
}

// CheckProcess checks the operator process: once idle after the run, its
// goroutines are back near the baseline of the idle process before it
// (at most slack more), and its peak RSS stayed under maxRSS.
func (ch *Checker) CheckProcess(baseline, end Process, peakRSS int64, slack int, maxRSS int64) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.check(Goroutines)
	if end.Goroutines > baseline.Goroutines+slack {
		ch.violate(Goroutines, fmt.Sprintf("%d goroutines after the run, %d before (slack %d)", end.Goroutines, baseline.Goroutines, slack), "operator process")
	}
	ch.check(Memory)
	if peakRSS > maxRSS {
		ch.violate(Memory, fmt.Sprintf("peak RSS %d MiB > %d MiB", peakRSS>>20, maxRSS>>20), "operator process")
	}
}
