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

// Package invariants checks what bindgate promises, from the API server
// directly (never through the operator's eyes), for the fault suites and
// the soak run:
//
//   - no node is overcommitted at any moment (sampled on every pod and
//     node event while the run goes on), no pod is bound twice;
//   - no bound pod breaches a constraint kube-scheduler would enforce
//     (kube-scheduler's own PreFilter/Filter plugins re-run on the final
//     state) or lies outside its policy's nodeSelector;
//   - every gated pod ends bound, rejected with a reason, or visibly
//     waiting with a reason;
//   - every reservation is released once its pod is bound or gone, and
//     the policies' status converges;
//   - every bound pod's PostBind notice is delivered at least once, with
//     one stable id;
//   - the operator process has no goroutine leak and bounded memory.
//
// The first violation is kept with the objects involved; Report says which
// invariants were checked how often.
package invariants

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// Names of the invariants, as reports print them.
const (
	NoOvercommit       = "no-node-overcommitted"
	BoundOnce          = "no-pod-bound-twice"
	Constraints        = "bound-pods-satisfy-kube-scheduler-filters"
	PolicyNodeSelector = "bound-pods-inside-policy-nodeSelector"
	Outcome            = "every-gated-pod-bound-rejected-or-waiting-with-reason"
	AllBound           = "every-pod-bound"
	Reservations       = "reservations-released-once-bound-or-gone"
	PolicyStatus       = "policy-status-converged"
	PostBind           = "postbind-delivered-once-with-stable-id"
	Goroutines         = "operator-goroutines-return-to-baseline"
	Memory             = "operator-memory-bounded"
)

// Violation is one broken invariant and the objects involved.
type Violation struct {
	Invariant string
	Objects   []string
	Detail    string
	At        time.Time
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s [%s]", v.Invariant, v.Detail, strings.Join(v.Objects, ", "))
}

// Checker watches the cluster from the API server directly and checks the
// invariants.
type Checker struct {
	cs  kubernetes.Interface
	c   client.Client
	nss map[string]bool

	mu         sync.Mutex
	violations []Violation
	checks     map[string]int
	nodes      map[string]*corev1.Node
	pods       map[types.UID]*corev1.Pod
	boundTo    map[types.UID]string
	policies   map[string]*bindgatev1alpha1.BindingPolicy

	stop context.CancelFunc
}

// Start begins sampling the pods of namespaces (all namespaces when none
// is given) and every node until ctx ends or Stop is called.
func Start(ctx context.Context, cs kubernetes.Interface, c client.Client, namespaces ...string) (*Checker, error) {
	ctx, cancel := context.WithCancel(ctx)
	ch := &Checker{
		cs: cs, c: c, nss: map[string]bool{}, checks: map[string]int{},
		nodes: map[string]*corev1.Node{}, pods: map[types.UID]*corev1.Pod{}, boundTo: map[types.UID]string{},
		policies: map[string]*bindgatev1alpha1.BindingPolicy{}, stop: cancel,
	}
	for _, ns := range namespaces {
		ch.nss[ns] = true
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	pods, nodes := factory.Core().V1().Pods().Informer(), factory.Core().V1().Nodes().Informer()
	if _, err := pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { ch.onPod(o) },
		UpdateFunc: func(_, o any) { ch.onPod(o) },
		DeleteFunc: func(o any) { ch.onPodDelete(o) },
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("pod handler: %w", err)
	}
	if _, err := nodes.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { ch.onNode(o) },
		UpdateFunc: func(_, o any) { ch.onNode(o) },
		DeleteFunc: func(o any) { ch.onNodeDelete(o) },
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("node handler: %w", err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			return nil, fmt.Errorf("syncing the %v informer", typ)
		}
	}
	go ch.samplePolicies(ctx)
	return ch, nil
}

// Stop ends the sampling.
func (ch *Checker) Stop() { ch.stop() }

func (ch *Checker) violate(inv, detail string, objects ...string) {
	ch.violations = append(ch.violations, Violation{Invariant: inv, Detail: detail, Objects: objects, At: time.Now()})
}

func (ch *Checker) check(inv string) { ch.checks[inv]++ }

// Violations returns every violation seen, first first.
func (ch *Checker) Violations() []Violation {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return append([]Violation(nil), ch.violations...)
}

// First returns the first violation, if any.
func (ch *Checker) First() (Violation, bool) {
	v := ch.Violations()
	if len(v) == 0 {
		return Violation{}, false
	}
	return v[0], true
}

// Report lists the invariants checked, how often, and the violations.
func (ch *Checker) Report() string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	names := make([]string, 0, len(ch.checks))
	for n := range ch.checks {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		bad := 0
		for _, v := range ch.violations {
			if v.Invariant == n {
				bad++
			}
		}
		fmt.Fprintf(&b, "  %-55s checked %7d  violated %d\n", n, ch.checks[n], bad)
	}
	return b.String()
}

func podKey(p *corev1.Pod) string { return "pod " + p.Namespace + "/" + p.Name }

func (ch *Checker) onPod(o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.pods[p.UID] = p
	if p.Spec.NodeName == "" {
		return
	}
	if ch.nss[p.Namespace] || len(ch.nss) == 0 {
		ch.check(BoundOnce)
		if prev, ok := ch.boundTo[p.UID]; ok && prev != p.Spec.NodeName {
			ch.violate(BoundOnce, fmt.Sprintf("bound to %s, then to %s", prev, p.Spec.NodeName), podKey(p), "node "+prev, "node "+p.Spec.NodeName)
		}
		ch.boundTo[p.UID] = p.Spec.NodeName
	}
	ch.checkNode(p.Spec.NodeName)
}

func (ch *Checker) onPodDelete(o any) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	if p, ok := o.(*corev1.Pod); ok {
		ch.mu.Lock()
		delete(ch.pods, p.UID)
		ch.mu.Unlock()
	}
}

func (ch *Checker) onNode(o any) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.nodes[n.Name] = n
	ch.checkNode(n.Name)
}

func (ch *Checker) onNodeDelete(o any) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	if n, ok := o.(*corev1.Node); ok {
		ch.mu.Lock()
		delete(ch.nodes, n.Name)
		ch.mu.Unlock()
	}
}

// checkNode compares what the pods bound to node request with its
// allocatable (with ch.mu held). Pods that ended (Succeeded, Failed) no
// longer count, as for kube-scheduler.
func (ch *Checker) checkNode(node string) {
	n, ok := ch.nodes[node]
	if !ok {
		return
	}
	ch.check(NoOvercommit)
	used := corev1.ResourceList{}
	var names []string
	count := int64(0)
	for _, p := range ch.pods {
		if p.Spec.NodeName != node || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		count++
		names = append(names, "pod "+p.Namespace+"/"+p.Name)
		for k, v := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			q := used[k]
			q.Add(v)
			used[k] = q
		}
	}
	used[corev1.ResourcePods] = *resource.NewQuantity(count, resource.DecimalSI)
	for k, q := range used {
		if alloc, ok := n.Status.Allocatable[k]; ok && q.Cmp(alloc) > 0 {
			sort.Strings(names)
			ch.violate(NoOvercommit, fmt.Sprintf("%s requested %s > allocatable %s", k, q.String(), alloc.String()),
				append([]string{"node " + node}, names...)...)
			return
		}
	}
}

// samplePolicies remembers the last spec seen of every policy, so pods
// bound under a policy deleted later are still checked against it.
func (ch *Checker) samplePolicies(ctx context.Context) {
	_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var list bindgatev1alpha1.BindingPolicyList
		if err := ch.c.List(ctx, &list); err != nil {
			return false, nil //nolint:nilerr // the API server may be restarting: sample again
		}
		ch.mu.Lock()
		for i := range list.Items {
			ch.policies[list.Items[i].Name] = &list.Items[i]
		}
		ch.mu.Unlock()
		return false, nil
	})
}

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
