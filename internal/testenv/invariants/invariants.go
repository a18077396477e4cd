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
