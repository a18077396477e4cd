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

package placement

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/framework"
)

// These tests run the real framework and plugins over bindgate's cache. The
// informer factory reads from an empty clientset: it serves only the
// listers of objects these pods do not use (volumes, storage classes,
// namespaces); controller behaviour is tested on a real API server in
// controllers/.

type nodeBuilder struct{ n *corev1.Node }

func node(name string) *nodeBuilder {
	return &nodeBuilder{n: &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods: resource.MustParse("110"),
		}},
	}}
}

func (b *nodeBuilder) label(k, v string) *nodeBuilder { b.n.Labels[k] = v; return b }
func (b *nodeBuilder) unschedulable() *nodeBuilder    { b.n.Spec.Unschedulable = true; return b }
func (b *nodeBuilder) obj() *corev1.Node              { return b.n }

// pod requests cpu; bound to node when node != "".
func pod(name, cpu, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
}

func antiAffine(p *corev1.Pod, app string) *corev1.Pod {
	p.Labels["app"] = app
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
	return p
}

func policy(mutate ...func(*bindgatev1alpha1.BindingPolicy)) *bindgatev1alpha1.BindingPolicy {
	p := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "uid-p", Generation: 1}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func withNodeSelector(k, v string) func(*bindgatev1alpha1.BindingPolicy) {
	return func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
}

func withStrategy(s bindgatev1alpha1.ScoringStrategyType) func(*bindgatev1alpha1.BindingPolicy) {
	return func(p *bindgatev1alpha1.BindingPolicy) { p.Spec.Scoring = &bindgatev1alpha1.Scoring{Strategy: s} }
}

func withCapacity(cpu string) func(*bindgatev1alpha1.BindingPolicy) {
	return func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.Capacity = map[corev1.ResourceName]bindgatev1alpha1.CapacityQuantity{corev1.ResourceCPU: {Quantity: resource.MustParse(cpu)}}
	}
}

func newPlacer(t testing.TB, percentage int32, nodes []*corev1.Node, bound []*corev1.Pod) (*Placer, *cache.Cache) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, ok := t.(*testing.B); ok {
		// A benchmark prints every log line, and the framework logs one
		// per profile it builds ("Disabling signatures ...").
		ctx = klog.NewContext(ctx, logr.Discard())
	} else {
		ctx = klog.NewContext(ctx, ktesting.NewLogger(t, ktesting.NewConfig()))
	}
	c := cache.New(ctx, nil)
	for _, n := range nodes {
		c.UpsertNode(n)
	}
	for _, p := range bound {
		c.UpsertPod(p)
	}
	cs := fake.NewClientset()
	p, err := New(ctx, Options{Cache: c, Client: cs, Informers: informers.NewSharedInformerFactory(cs, 0), PercentageOfNodesToScore: percentage})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.Start(ctx) }()
	return p, c
}

func selectNode(t *testing.T, p *Placer, pd *corev1.Pod, pol *bindgatev1alpha1.BindingPolicy) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.Lock()
	defer p.Unlock()
	c, err := p.SelectNode(ctx, pd, pol)
	if err != nil {
		return "", err.Error()
	}
	return c.Node, ""
}

func TestSelectNode(t *testing.T) {
	cases := map[string]struct {
		nodes  []*corev1.Node
		bound  []*corev1.Pod
		policy *bindgatev1alpha1.BindingPolicy
		pod    *corev1.Pod
		want   string
		// wantErr is the FitError's message when no node fits.
		wantErr string
	}{
		"least allocated node wins": {
			nodes:  []*corev1.Node{node("a").obj(), node("b").obj(), node("c").obj()},
			bound:  []*corev1.Pod{pod("on-a", "2", "a"), pod("on-c", "1", "c")},
			policy: policy(),
			pod:    pod("new", "500m", ""),
			want:   "b",
		},
		"most allocated node wins under MostAllocated": {
			nodes:  []*corev1.Node{node("a").obj(), node("b").obj(), node("c").obj()},
			bound:  []*corev1.Pod{pod("on-a", "2", "a"), pod("on-c", "1", "c")},
			policy: policy(withStrategy(bindgatev1alpha1.MostAllocated)),
			pod:    pod("new", "500m", ""),
			want:   "a",
		},
		"only the policy's nodes": {
			nodes:  []*corev1.Node{node("a").obj(), node("b").label("pool", "gpu").obj()},
			bound:  []*corev1.Pod{pod("on-b", "3", "b")},
			policy: policy(withNodeSelector("pool", "gpu")),
			pod:    pod("new", "500m", ""),
			want:   "b",
		},
		"full and unschedulable nodes are left out": {
			nodes:  []*corev1.Node{node("full").obj(), node("cordoned").unschedulable().obj(), node("free").obj()},
			bound:  []*corev1.Pod{pod("on-full", "4", "full")},
			policy: policy(),
			pod:    pod("new", "1", ""),
			want:   "free",
		},
		"anti-affinity to a bound pod": {
			nodes:  []*corev1.Node{node("a").obj(), node("b").obj()},
			bound:  []*corev1.Pod{antiAffine(pod("db-0", "100m", "b"), "db")},
			policy: policy(),
			pod:    antiAffine(pod("db-1", "100m", ""), "db"),
			want:   "a",
		},
		"no node fits: each node counted once, under the first plugin that fails, in kube-scheduler's words": {
			nodes: []*corev1.Node{
				node("full").obj(), node("cordoned").unschedulable().obj(), node("other").label("pool", "x").obj(),
				node("full2").label("pool", "gpu").obj(),
			},
			bound:   []*corev1.Pod{pod("on-full2", "4", "full2")},
			policy:  policy(withNodeSelector("pool", "gpu")),
			pod:     pod("new", "1", ""),
			wantErr: "0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't match policy nodeSelector.",
		},
		"dynamic resources are refused with the reason": {
			nodes:  []*corev1.Node{node("a").obj()},
			policy: policy(),
			pod: func() *corev1.Pod {
				p := pod("dra", "1", "")
				p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: new("gpu-claim")}}
				return p
			}(),
			wantErr: "0/1 nodes are available: " + ErrReasonDRA + ".",
		},
		"no nodes at all": {
			policy:  policy(),
			pod:     pod("new", "1", ""),
			wantErr: ErrNoNodes.Error(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, _ := newPlacer(t, 0, tc.nodes, tc.bound)
			got, gotErr := selectNode(t, p, tc.pod, tc.policy)
			if got != tc.want {
				t.Errorf("node: got %q, want %q", got, tc.want)
			}
			if gotErr != tc.wantErr {
				t.Errorf("fit error: got %q, want %q", gotErr, tc.wantErr)
			}
		})
	}
}

// TestReservedPodsCount: a reservation (an assumed pod) blocks an
// anti-affine pod and takes node capacity, and the policy's capacity budget
// counts it, with the refusal naming used/limit and counting only the nodes
// the other plugins accepted.
func TestReservedPodsCount(t *testing.T) {
	nodes := []*corev1.Node{node("a").label("pool", "gpu").obj(), node("b").label("pool", "gpu").obj(), node("c").obj()}
	pol := policy(withNodeSelector("pool", "gpu"), withCapacity("2"))
	p, c := newPlacer(t, 0, nodes, nil)
	first := antiAffine(pod("db-0", "1500m", ""), "db")
	n, msg := selectNode(t, p, first, pol)
	if msg != "" {
		t.Fatal(msg)
	}
	if err := c.Reserve(first, framework.PodRequests(first), n, pol, time.Time{}); err != nil {
		t.Fatal(err)
	}
	second := antiAffine(pod("db-1", "100m", ""), "db")
	got, msg := selectNode(t, p, second, pol)
	if msg != "" || got == n {
		t.Fatalf("anti-affine pod: node %q (reserved one on %q), err %q", got, n, msg)
	}
	big := pod("big", "1", "")
	_, msg = selectNode(t, p, big, pol)
	want := "0/3 nodes are available: 1 node(s) didn't match policy nodeSelector, 2 policy p capacity exhausted for cpu: 1500m/2 used."
	if msg != want {
		t.Errorf("capacity refusal:\n got %q\nwant %q", msg, want)
	}
}

// TestSelectNodeRotates: on a cluster large enough to be sampled, each
// walk starts where the previous one stopped, as kube-scheduler's does.
func TestSelectNodeRotates(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 120 {
		nodes = append(nodes, node(fmt.Sprintf("n-%03d", i)).obj())
	}
	// 50% of 120 is 60, raised to the minimum of 100.
	p, _ := newPlacer(t, 50, nodes, nil)
	var starts []int
	for range 3 {
		starts = append(starts, p.nextStart)
		if _, msg := selectNode(t, p, pod("new", "100m", ""), policy()); msg != "" {
			t.Fatal(msg)
		}
	}
	if diff := cmp.Diff([]int{0, 100, 80}, starts); diff != "" {
		t.Errorf("walk starts (-want +got):\n%s", diff)
	}
}

// TestFilterStatusesCleared: the per-node statuses a cycle's failing nodes
// leave in the buffer kept between cycles are gone when it returns, so the
// next cycle's walk and diagnosis count only its own.
func TestFilterStatusesCleared(t *testing.T) {
	nodes := []*corev1.Node{node("full").obj(), node("free").obj(), node("cordoned").unschedulable().obj()}
	p, _ := newPlacer(t, 0, nodes, []*corev1.Pod{pod("on-full", "4", "full")})
	for _, tc := range []struct {
		cpu, wantErr string
	}{
		{cpu: "1"},
		{cpu: "5", wantErr: "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu."},
	} {
		_, msg := selectNode(t, p, pod("new", tc.cpu, ""), policy())
		if msg != tc.wantErr {
			t.Errorf("pod of %s cpu: fit error %q, want %q", tc.cpu, msg, tc.wantErr)
		}
		if len(p.filterStatuses) != len(nodes) {
			t.Fatalf("buffer of %d statuses, want one per node (%d)", len(p.filterStatuses), len(nodes))
		}
		for i, st := range p.filterStatuses {
			if st != nil {
				t.Errorf("pod of %s cpu: status %d left in the buffer: %v", tc.cpu, i, st)
			}
		}
	}
}

// BenchmarkSelectNode: one scheduling cycle of a plain pod on the bench's
// two plain cluster sizes, each node with one bound pod. Its B/op is what
// the collector clears per pod; most of it is kube-scheduler's plugins'.
func BenchmarkSelectNode(b *testing.B) {
	for _, n := range []int{500, 5000} {
		b.Run(fmt.Sprintf("%d nodes", n), func(b *testing.B) {
			nodes := make([]*corev1.Node, n)
			bound := make([]*corev1.Pod, n)
			for i := range nodes {
				nodes[i] = node(fmt.Sprintf("n-%05d", i)).obj()
				bound[i] = pod(fmt.Sprintf("on-%05d", i), "100m", nodes[i].Name)
			}
			p, _ := newPlacer(b, 0, nodes, bound)
			pd, pol := pod("new", "100m", ""), policy()
			ctx := context.Background()
			p.Lock()
			defer p.Unlock()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.SelectNode(ctx, pd, pol); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	for nodes, want := range map[int32]int32{50: 50, 100: 100, 500: 230, 5000: 500, 20000: 1000} {
		if got := numFeasibleNodesToFind(0, nodes); got != want {
			t.Errorf("numFeasibleNodesToFind(%d) = %d, want %d", nodes, got, want)
		}
	}
	if got := numFeasibleNodesToFind(100, 5000); got != 5000 {
		t.Errorf("percentage 100: got %d", got)
	}
}

// TestProfile: kube-scheduler's default plugins with their weights, less
// what bindgate does not run, plus the policy's plugins; the strategy
// becomes NodeResourcesFit's scoring strategy.
func TestProfile(t *testing.T) {
	prof, err := Profile(bindgatev1alpha1.MostAllocated, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int32{}
	var order []string
	for _, p := range prof.Plugins.MultiPoint.Enabled {
		got[p.Name] = p.Weight
		order = append(order, p.Name)
	}
	want := map[string]int32{
		UnsupportedName: 0, PolicyNodeSelectorName: 0, names.SchedulingGates: 0, names.PrioritySort: 0,
		names.NodeName: 0, names.NodeUnschedulable: 0, names.TaintToleration: 3, names.NodeAffinity: 2,
		names.NodePorts: 0, names.NodeResourcesFit: 1, names.VolumeRestrictions: 0, names.NodeVolumeLimits: 0,
		names.VolumeBinding: 0, names.VolumeZone: 0, names.PodTopologySpread: 2, names.InterPodAffinity: 2,
		names.NodeResourcesBalancedAllocation: 1, names.ImageLocality: 1, names.DefaultBinder: 0, PolicyCapacityName: 0,
		names.NodeDeclaredFeatures: 0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plugins and weights (-want +got):\n%s", diff)
	}
	if order[len(order)-1] != PolicyCapacityName {
		t.Errorf("capacity must filter last: %v", order)
	}
	for _, pc := range prof.PluginConfig {
		if args, ok := pc.Args.(*config.NodeResourcesFitArgs); ok && args.ScoringStrategy.Type != config.MostAllocated {
			t.Errorf("NodeResourcesFit strategy %s, want MostAllocated", args.ScoringStrategy.Type)
		}
		if args, ok := pc.Args.(*config.PodTopologySpreadArgs); ok && args.DefaultingType != config.SystemDefaulting {
			t.Errorf("PodTopologySpread defaulting %s, want the system defaults", args.DefaultingType)
		}
	}
}

// TestProfileDRA: with dra, DynamicResources is in the profile with
// kube-scheduler's weight; each strategy's profile has a name of its own
// (the plugin keys a shared pod index by it).
func TestProfileDRA(t *testing.T) {
	weight := func(prof *config.KubeSchedulerProfile) (int32, bool) {
		for _, p := range prof.Plugins.MultiPoint.Enabled {
			if p.Name == names.DynamicResources {
				return p.Weight, true
			}
		}
		return 0, false
	}
	seen := map[string]bindgatev1alpha1.ScoringStrategyType{}
	for _, strategy := range []bindgatev1alpha1.ScoringStrategyType{bindgatev1alpha1.LeastAllocated, bindgatev1alpha1.MostAllocated, bindgatev1alpha1.BalancedAllocation} {
		for _, dra := range []bool{false, true} {
			prof, err := Profile(strategy, 0, dra)
			if err != nil {
				t.Fatal(err)
			}
			if w, ok := weight(prof); ok != dra || (ok && w != 2) {
				t.Errorf("%s, dra=%v: DynamicResources in the profile = %v (weight %d)", strategy, dra, ok, w)
			}
			if other, dup := seen[prof.SchedulerName]; dup && other != strategy {
				t.Errorf("profiles of %s and %s share the name %q", other, strategy, prof.SchedulerName)
			}
			seen[prof.SchedulerName] = strategy
		}
	}
}

// TestEvaluate checks the per-node verdicts explain shows: each refused
// node under the first plugin that refused it, and the feasible nodes'
// scores per plugin, best first, agreeing with SelectNode's choice.
func TestEvaluate(t *testing.T) {
	type verdict struct{ Plugin, Reason string }
	cases := map[string]struct {
		nodes        []*corev1.Node
		bound        []*corev1.Pod
		policy       *bindgatev1alpha1.BindingPolicy
		pod          *corev1.Pod
		wantRefused  map[string]verdict
		wantFeasible []string
	}{
		"selector, resources and anti-affinity": {
			nodes: []*corev1.Node{
				node("other").obj(), node("full").label("pool", "p").obj(),
				node("taken").label("pool", "p").obj(), node("free").label("pool", "p").obj(), node("half").label("pool", "p").obj(),
			},
			bound:  []*corev1.Pod{pod("on-full", "4", "full"), antiAffine(pod("db-0", "100m", "taken"), "db"), pod("on-half", "2", "half")},
			policy: policy(withNodeSelector("pool", "p")),
			pod:    antiAffine(pod("db-1", "1", ""), "db"),
			wantRefused: map[string]verdict{
				"other": {PolicyNodeSelectorName, ErrReasonPolicyNodeSelector},
				"full":  {names.NodeResourcesFit, "Insufficient cpu"},
				"taken": {names.InterPodAffinity, "node(s) didn't match pod anti-affinity rules"},
			},
			wantFeasible: []string{"free", "half"},
		},
		"capacity refuses every node the other plugins accept": {
			nodes:  []*corev1.Node{node("a").obj(), node("b").unschedulable().obj()},
			bound:  nil,
			policy: policy(withCapacity("500m")),
			pod:    pod("big", "1", ""),
			wantRefused: map[string]verdict{
				"a": {PolicyCapacityName, "policy p capacity exhausted for cpu: 0/500m used"},
				"b": {names.NodeUnschedulable, "node(s) were unschedulable"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, _ := newPlacer(t, 0, tc.nodes, tc.bound)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			p.Lock()
			ev, err := p.Evaluate(ctx, tc.pod, tc.policy)
			p.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]verdict{}
			for n, st := range ev.Refused {
				got[n] = verdict{st.Plugin(), st.Message()}
			}
			if diff := cmp.Diff(tc.wantRefused, got); diff != "" {
				t.Errorf("refused nodes (-want +got):\n%s", diff)
			}
			var feasible []string
			for _, s := range ev.Scores {
				feasible = append(feasible, s.Name)
				var sum int64
				for _, ps := range s.Scores {
					sum += ps.Score
				}
				if sum != s.TotalScore || len(s.Scores) == 0 {
					t.Errorf("node %s: plugin scores %v do not add up to %d", s.Name, s.Scores, s.TotalScore)
				}
			}
			if diff := cmp.Diff(tc.wantFeasible, feasible); diff != "" {
				t.Errorf("feasible nodes, best first (-want +got):\n%s", diff)
			}
			if ev.NumNodes != len(tc.nodes) {
				t.Errorf("NumNodes = %d, want %d", ev.NumNodes, len(tc.nodes))
			}
			if len(tc.wantFeasible) > 0 {
				if chosen, _ := selectNode(t, p, tc.pod, tc.policy); chosen != tc.wantFeasible[0] {
					t.Errorf("SelectNode chose %q, Evaluate ranks %q first", chosen, tc.wantFeasible[0])
				}
			}
		})
	}
}

// TestPolicyNodeSelectorFollowsNodeLabels: a policy nodeSelector that
// selects every node is skipped for as long as no node is added, deleted or
// relabelled; any such change is seen by the next cycle.
func TestPolicyNodeSelectorFollowsNodeLabels(t *testing.T) {
	pol := policy(withNodeSelector("pool", "gpu"))
	// a holds a pod, so the empty b wins while both are in the pool.
	p, c := newPlacer(t, 0, []*corev1.Node{node("a").label("pool", "gpu").obj(), node("b").label("pool", "gpu").obj()},
		[]*corev1.Pod{pod("on-a", "2", "a")})
	steps := []struct {
		name    string
		change  func()
		want    string
		wantAll bool // the memo says the selector selects every node
	}{
		{name: "every node in the pool", change: func() {}, want: "b", wantAll: true},
		{name: "b relabelled out of the pool", change: func() { c.UpsertNode(node("b").label("pool", "cpu").obj()) }, want: "a"},
		{name: "b back in the pool", change: func() { c.UpsertNode(node("b").label("pool", "gpu").obj()) }, want: "b", wantAll: true},
		{name: "an empty node outside the pool added", change: func() { c.UpsertNode(node("c").label("pool", "x").obj()) }, want: "b"},
		{name: "that node deleted", change: func() { c.DeleteNode("c") }, want: "b", wantAll: true},
		{name: "b deleted", change: func() { c.DeleteNode("b") }, want: "a", wantAll: true},
	}
	for _, s := range steps {
		s.change()
		got, msg := selectNode(t, p, pod("new-"+s.name, "100m", ""), pol)
		if got != s.want || msg != "" {
			t.Errorf("%s: got node %q (%q), want %q", s.name, got, msg, s.want)
		}
		p.selectors.mu.Lock()
		all := p.selectors.all["pool=gpu"]
		p.selectors.mu.Unlock()
		if all != s.wantAll {
			t.Errorf("%s: remembered as selecting every node: %v, want %v", s.name, all, s.wantAll)
		}
	}
}

// TestReserveDropsPlacementOnlyState: a reservation keeps its cycle until
// the bind ends, but not the Filter and Score plugins' states (for an
// anti-affine pod, InterPodAffinity's counts per topology domain); the
// states of the plugins with later extension points (VolumeBinding's) stay,
// and PreBind and Unreserve still run on what is left.
func TestReserveDropsPlacementOnlyState(t *testing.T) {
	nodes := []*corev1.Node{node("a").obj(), node("b").obj()}
	p, _ := newPlacer(t, 0, nodes, []*corev1.Pod{antiAffine(pod("db-0", "100m", "a"), "db")})
	pd := antiAffine(pod("db-1", "100m", ""), "db")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.Lock()
	defer p.Unlock()
	c, err := p.SelectNode(ctx, pd, policy())
	if err != nil {
		t.Fatal(err)
	}
	present := func() map[string]bool {
		got := map[string]bool{}
		for _, key := range []string{"PreFilter" + names.InterPodAffinity, "PreFilter" + names.NodeResourcesFit,
			"PreFilter" + names.PodTopologySpread, "PreScore" + names.PodTopologySpread, names.VolumeBinding} {
			_, err := c.State.Read(fwk.StateKey(key))
			got[key] = err == nil
		}
		return got
	}
	before := present()
	if !before["PreFilter"+names.InterPodAffinity] || !before[names.VolumeBinding] {
		t.Fatalf("states after the scheduling cycle: %v (want InterPodAffinity's and VolumeBinding's)", before)
	}
	if st := p.Reserve(ctx, c, pd); !st.IsSuccess() {
		t.Fatal(st.AsError())
	}
	want := map[string]bool{
		"PreFilter" + names.InterPodAffinity: false, "PreFilter" + names.NodeResourcesFit: false,
		"PreFilter" + names.PodTopologySpread: false, "PreScore" + names.PodTopologySpread: false,
		names.VolumeBinding: true,
	}
	if diff := cmp.Diff(want, present()); diff != "" {
		t.Errorf("states after Reserve (-want +got):\n%s", diff)
	}
	if st := p.PreBind(ctx, c, pd); !st.IsSuccess() {
		t.Errorf("PreBind after Reserve: %v", st.AsError())
	}
	p.Unreserve(ctx, c, pd)
}

func TestPlacementOnlyKeys(t *testing.T) {
	enabled := &config.Plugins{
		PreFilter: config.PluginSet{Enabled: []config.Plugin{{Name: "A"}, {Name: "V"}}},
		Filter:    config.PluginSet{Enabled: []config.Plugin{{Name: "A"}, {Name: "B"}, {Name: "V"}}},
		PreScore:  config.PluginSet{Enabled: []config.Plugin{{Name: "C"}}},
		Score:     config.PluginSet{Enabled: []config.Plugin{{Name: "C"}, {Name: "D"}}},
		Reserve:   config.PluginSet{Enabled: []config.Plugin{{Name: "V"}}},
		PreBind:   config.PluginSet{Enabled: []config.Plugin{{Name: "V"}, {Name: "D"}}},
	}
	want := []fwk.StateKey{"PreFilterA", "PreScoreA", "PreFilterB", "PreScoreB", "PreFilterC", "PreScoreC"}
	if diff := cmp.Diff(want, placementOnlyKeys(enabled)); diff != "" {
		t.Errorf("placementOnlyKeys (-want +got):\n%s", diff)
	}
}

// classesOf backs the listed extended resources with a DeviceClass.
type classesOf map[corev1.ResourceName]bool

func (c classesOf) GetDeviceClass(name corev1.ResourceName) *resourcev1.DeviceClass {
	if c[name] {
		return &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "class-" + string(name)}}
	}
	return nil
}

// TestUnsupportedDRAExtendedResource: without DRA, a node that does not
// advertise an extended resource a DeviceClass backs is refused naming DRA;
// one that advertises it (a device plugin) is not; a resource no class
// backs, or a pod with no extended resource, is left to NodeResourcesFit.
func TestUnsupportedDRAExtendedResource(t *testing.T) {
	const gpu, plugin = corev1.ResourceName("example.com/gpu"), corev1.ResourceName("example.com/plugin")
	u := unsupported{draRefusal: ErrReasonDRA, classes: classesOf{gpu: true}}
	bare := node("bare").n
	advertised := node("advertised").n
	advertised.Status.Allocatable[gpu] = resource.MustParse("2")
	withReq := func(names ...corev1.ResourceName) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}}}}
		for _, n := range names {
			p.Spec.Containers[0].Resources.Requests[n] = resource.MustParse("1")
		}
		return p
	}
	refused := fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ErrReasonDRAExtendedResource(gpu, ErrReasonDRA))
	cases := map[string]struct {
		pod      *corev1.Pod
		skip     bool
		node     *corev1.Node
		wantNode *fwk.Status
	}{
		"no extended resource":          {pod: withReq(corev1.ResourceCPU), skip: true},
		"no class backs it":             {pod: withReq(plugin), skip: true},
		"backed, node does not have it": {pod: withReq(gpu), node: bare, wantNode: refused},
		"backed, node advertises it":    {pod: withReq(gpu), node: advertised},
		"backed and plain, bare node":   {pod: withReq(gpu, plugin), node: bare, wantNode: refused},
		"backed and plain, advertised":  {pod: withReq(gpu, plugin), node: advertised},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			state := schedframework.NewCycleState()
			_, st := u.PreFilter(context.Background(), state, tc.pod, nil)
			if tc.skip {
				if !st.IsSkip() {
					t.Fatalf("PreFilter = %v, want Skip", st)
				}
				return
			}
			if !st.IsSuccess() {
				t.Fatalf("PreFilter = %v, want success", st)
			}
			ni := fwk.NodeInfo(schedframework.NewNodeInfo())
			ni.SetNode(tc.node)
			got := u.Filter(context.Background(), state, tc.pod, ni)
			if diff := cmp.Diff(tc.wantNode.Message(), got.Message()); diff != "" || tc.wantNode.Code() != got.Code() {
				t.Errorf("Filter = %v, want %v", got, tc.wantNode)
			}
		})
	}
	// With resourceClaims the pod is refused in PreFilter, as before.
	claims := withReq()
	claims.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "c"}}
	if _, st := u.PreFilter(context.Background(), schedframework.NewCycleState(), claims, nil); st.Code() != fwk.UnschedulableAndUnresolvable || st.Message() != ErrReasonDRA {
		t.Errorf("PreFilter with resourceClaims = %v", st)
	}
}

// TestParallelism: the frameworks run their plugins over the nodes with
// the parallelism asked for, kube-scheduler's default when none is.
func TestParallelism(t *testing.T) {
	for name, tc := range map[string]struct{ set, want int }{
		"unset: kube-scheduler's 16": {set: 0, want: parallelize.DefaultParallelism},
		"set":                        {set: 3, want: 3},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cs := fake.NewClientset()
			p, err := New(ctx, Options{Cache: cache.New(ctx, nil), Client: cs, Informers: informers.NewSharedInformerFactory(cs, 0), Parallelism: tc.set})
			if err != nil {
				t.Fatal(err)
			}
			for strategy, fw := range p.frameworks {
				if got, want := fw.Parallelizer(), fwk.Parallelizer(parallelize.NewParallelizer(tc.want)); got != want {
					t.Errorf("%s framework's parallelizer %+v, want %+v", strategy, got, want)
				}
			}
		})
	}
}

// The cache and every extension point after Score share one assumed pod per
// cycle, as in kube-scheduler: a copy of the pod with spec.nodeName set,
// never the caller's pod itself.
func TestAssumedIsOneCopy(t *testing.T) {
	nodes := []*corev1.Node{node("a").obj()}
	p, c := newPlacer(t, 0, nodes, nil)
	pd := pod("web-0", "100m", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.Lock()
	defer p.Unlock()
	cy, err := p.SelectNode(ctx, pd, policy())
	if err != nil {
		t.Fatal(err)
	}
	assumed := cy.Assumed(pd)
	if assumed == pd || pd.Spec.NodeName != "" {
		t.Fatalf("Assumed returned the caller's pod or changed it (spec.nodeName %q)", pd.Spec.NodeName)
	}
	if assumed.Spec.NodeName != "a" {
		t.Errorf("assumed spec.nodeName = %q, want a", assumed.Spec.NodeName)
	}
	if again := cy.Assumed(pd.DeepCopy()); again != assumed {
		t.Error("a second call built another copy of the same pod")
	}
	if err := c.Reserve(assumed, framework.PodRequests(pd), cy.Node, policy(), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := p.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	ni, err := p.snapshot.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	kept := false
	for _, pi := range ni.GetPods() {
		kept = kept || pi.GetPod() == assumed
	}
	if !kept {
		t.Error("node a's snapshot does not hold the cycle's assumed pod itself")
	}
	other := pod("web-1", "100m", "")
	if a := cy.Assumed(other); a.UID != other.UID || a == assumed {
		t.Errorf("Assumed of another pod = %s, want a copy of %s", a.UID, other.UID)
	}
}

// TestRequestsExtended: the quick look never misses an extended resource
// the summed requests hold, on every list one can come from, and says none
// for pods that request only core resources. (It looks at pod-level
// requests too, which the sum leaves out for extended resources: a false
// alarm costs only the sum.)
func TestRequestsExtended(t *testing.T) {
	const gpu = corev1.ResourceName("example.com/gpu")
	one := func(name corev1.ResourceName) corev1.ResourceList {
		return corev1.ResourceList{name: resource.MustParse("1")}
	}
	base := func() *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: one(corev1.ResourceCPU)}}}}}
	}
	always := corev1.ContainerRestartPolicyAlways
	cases := map[string]struct {
		mutate func(*corev1.Pod)
		want   bool
	}{
		"cpu only":           {mutate: func(*corev1.Pod) {}},
		"no requests at all": {mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} }},
		"hugepages": {mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests["hugepages-2Mi"] = resource.MustParse("2Mi")
		}},
		"limit only (the API server copies it to the request)": {mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = one(gpu) }},
		"second container": {want: true, mutate: func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "d", Resources: corev1.ResourceRequirements{Requests: one(gpu)}})
		}},
		"init container": {want: true, mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: one(gpu)}}}
		}},
		"sidecar": {want: true, mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "s", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: one(gpu)}}}
		}},
		"overhead":           {want: true, mutate: func(p *corev1.Pod) { p.Spec.Overhead = one(gpu) }},
		"pod-level requests": {want: true, mutate: func(p *corev1.Pod) { p.Spec.Resources = &corev1.ResourceRequirements{Requests: one(gpu)} }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := base()
			tc.mutate(p)
			summed := false
			for n := range framework.PodRequests(p).Scalar {
				summed = summed || v1helper.IsExtendedResourceName(n)
			}
			got := requestsExtended(p)
			if summed && !got {
				t.Fatal("requestsExtended missed an extended resource the summed requests hold")
			}
			if got != tc.want {
				t.Errorf("requestsExtended = %v, want %v (summed requests: %v)", got, tc.want, summed)
			}
		})
	}
}
