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

package faults_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	proxy "github.com/bindgate/bindgate/internal/testenv/faults"
	"github.com/bindgate/bindgate/internal/testenv/invariants"
	"github.com/bindgate/bindgate/test/faults"
)

var cluster *faults.Cluster

// full runs the long versions (make test-faults sets BINDGATE_FAULTS=full).
var full = os.Getenv("BINDGATE_FAULTS") == "full"

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // every scenario skips: they need a control plane
	}
	dir, err := os.MkdirTemp("", "bindgate-faults-")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	// A 504 after apply comes 200ms after the write, as after a timeout:
	// the operator's watches have usually shown the write by then.
	cluster, err = faults.NewCluster(ctx, dir, proxy.Config{Seed: 1, WatchCutMin: time.Second, WatchCutMax: 4 * time.Second,
		TimeoutAfterApplyDelay: 200 * time.Millisecond})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cluster.Close()
	if code == 0 {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, "operator logs kept in", dir)
	}
	os.Exit(code)
}

// approvedExpr approves a pod once it carries the annotation
// example.com/approved=true.
const approvedExpr = `has(pod.metadata.annotations) && pod.metadata.annotations[?'example.com/approved'].orValue('') == 'true'`

// scenario is one seeded fault scenario.
type scenario struct {
	// rules are the proxy's faults for the whole run.
	rules []proxy.Rule
	// pods is how many pods are created (more with BINDGATE_FAULTS=full).
	pods int
	// args are extra operator flags; replicas is how many run.
	args     []string
	replicas int
	// permit makes pods wait in Permit for an approval the scenario gives
	// (approve).
	permit bool
	// disrupt runs while the pods are created.
	disrupt func(ctx context.Context, r *run)
	// notAllBound: capacity or policy changes leave some pods unbound (they
	// must then carry a reason).
	notAllBound bool
	extraChecks func(ctx context.Context, r *run)
}

// run is a scenario in progress.
type run struct {
	t       *testing.T
	seed    uint64
	mu      sync.Mutex
	rng     *rand.Rand
	ns      string
	policy  string
	nodes   []string
	ops     []*faults.Operator
	args    []string
	started int
	rec     *faults.Receiver
	log     []string
}

func (r *run) logf(format string, args ...any) {
	r.mu.Lock()
	r.log = append(r.log, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *run) int64N(n int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rng.Int64N(n)
}

func (r *run) duration(lo, hi time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return lo + time.Duration(r.rng.Int64N(int64(hi-lo)))
}

func (r *run) startOperator(extra ...string) *faults.Operator {
	r.mu.Lock()
	r.started++
	name := fmt.Sprintf("%s-op%d", r.policy, r.started)
	r.mu.Unlock()
	op, err := cluster.StartOperator(name, append(append([]string(nil), r.args...), extra...)...)
	if err != nil {
		r.t.Error(err)
		return nil
	}
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
	return op
}

// live returns the operators still running.
func (r *run) live() []*faults.Operator {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*faults.Operator
	for _, o := range r.ops {
		if !o.Exited() {
			out = append(out, o)
		}
	}
	return out
}

func seedFor(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("BINDGATE_FAULTS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BINDGATE_FAULTS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay: BINDGATE_FAULTS_SEED=%d)", seed, seed)
	return seed
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// runScenario creates nodes with room for every pod, a policy with a
// flaky PostBind receiver, starts the operator(s) against the proxy with
// the scenario's faults, creates the pods while the scenario disrupts, and
// checks every invariant.
func runScenario(t *testing.T, sc scenario) {
	if testing.Short() {
		t.Skip("needs a control plane and the operator binary; run without -short")
	}
	seed := seedFor(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	env := cluster.Env
	r := &run{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 2)), ns: cluster.Name("ns"), policy: cluster.Name("pol"), args: sc.args}
	if err := cluster.CreateNamespace(ctx, r.ns); err != nil {
		t.Fatal(err)
	}
	numPods := sc.pods
	if full {
		numPods *= 4
	}
	// 200m on average: room for all on numPods/8 CPUs (4 per node), kept
	// at twice that.
	numNodes := max(3, numPods/16+1)
	for i := range numNodes {
		name := fmt.Sprintf("%s-n%d", r.policy, i)
		if err := cluster.CreateNode(ctx, name, 4, map[string]string{"pool": r.policy}); err != nil {
			t.Fatal(err)
		}
		r.nodes = append(r.nodes, name)
	}
	t.Cleanup(func() {
		for _, n := range r.nodes {
			_ = env.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
	})
	r.rec = faults.NewReceiver(seed, 0.1)
	t.Cleanup(r.rec.Close)
	pol := &bindgatev1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: r.policy},
		Spec: bindgatev1alpha1.BindingPolicySpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": r.policy}},
			PostBind:     []bindgatev1alpha1.PostBindWebhook{r.rec.Hook("audit", 20)},
		},
	}
	if sc.permit {
		pol.Spec.Permit = &bindgatev1alpha1.Permit{
			Timeout: &metav1.Duration{Duration: 10 * time.Minute}, OnTimeout: bindgatev1alpha1.PermitTimeoutReject,
			Conditions: []bindgatev1alpha1.PermitCondition{{Name: "approved", Expression: approvedExpr}},
		}
	}
	if err := env.Client.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pol) })

	checker, err := invariants.Start(ctx, env.Clientset, env.Client, r.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer checker.Stop()

	before := cluster.Proxy.Counts()
	if err := cluster.Proxy.SetRules(sc.rules); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cluster.Proxy.SetRules(nil) }()

	replicas := max(1, sc.replicas)
	for range replicas {
		r.startOperator()
	}
	t.Cleanup(func() {
		for _, o := range r.live() {
			_ = o.Stop(10 * time.Second)
		}
		if t.Failed() {
			for _, o := range r.ops {
				t.Logf("operator %s log tail:\n%s", o.Name, o.Tail(30))
			}
		}
	})
	waitFor(ctx, t, time.Minute, "policy "+r.policy+" Ready", func() bool {
		p := &bindgatev1alpha1.BindingPolicy{}
		return env.Client.Get(ctx, client.ObjectKey{Name: r.policy}, p) == nil &&
			meta.IsStatusConditionTrue(p.Status.Conditions, bindgatev1alpha1.ConditionReady)
	})
	// The process measured: under leader election the leader, whose
	// controllers run (a standby's baseline, compared with the same process
	// once it took over, counted its controllers' goroutines as a leak).
	measured := func() *faults.Operator {
		if slices.Contains(sc.args, "--leader-elect=true") {
			return leader(ctx, t, r)
		}
		return r.live()[0]
	}
	baseOp := measured()
	baseline := sampleIdle(ctx, t, baseOp)
	baseProfile, _ := baseOp.Goroutines(ctx)

	// RSS is sampled through the run.
	var peak int64
	var peakMu sync.Mutex
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		_ = wait.PollUntilContextCancel(sampleCtx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			for _, o := range r.live() {
				if s, err := o.Sample(ctx); err == nil {
					peakMu.Lock()
					peak = max(peak, s.RSS)
					peakMu.Unlock()
				}
			}
			return false, nil
		})
	}()

	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range numPods {
			mcpu := 100 + 50*r.int64N(5)
			p := faults.Pod(r.ns, fmt.Sprintf("p-%03d", i), r.policy, mcpu)
			if err := createRetrying(ctx, p); err != nil {
				t.Error(err)
				return
			}
			if i%8 == 7 && !sleep(ctx, 150*time.Millisecond) {
				return
			}
		}
	})
	if sc.disrupt != nil {
		wg.Go(func() { sc.disrupt(ctx, r) })
	}
	wg.Wait()
	if len(r.live()) == 0 {
		t.Fatal("no operator runs after the disruptions")
	}
	if sc.permit {
		approveAll(ctx, t, r.ns)
	}
	exp := invariants.Expect{AllBound: !sc.notAllBound, Settle: 3 * time.Minute, PostBindHook: "audit", Delivered: r.rec.Delivered}
	if err := checker.Final(ctx, exp); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if sc.extraChecks != nil {
		sc.extraChecks(ctx, r)
	}
	stopSampling()
	<-sampled
	_ = cluster.Proxy.SetRules(nil)
	after := cluster.Proxy.Counts()
	endOp := measured()
	end := sampleIdle(ctx, t, endOp)
	// The idle baseline has not started the pools that start on demand
	// and stay bounded (up to 16 pod workers, 4 PostBind workers per hook,
	// event broadcasters, connections to the receiver): about 100 more
	// after a run, whatever its size. A leak per pod or per request grows
	// with the run (the soak run, with thousands of pods, shows it).
	checker.CheckProcess(baseline, end, peak, 150, 512<<20)
	if end.Goroutines > baseline.Goroutines+20 {
		endProfile, _ := endOp.Goroutines(ctx)
		t.Logf("goroutines that grew:\n  %s", strings.Join(faults.GrownStacks(baseProfile, endProfile, 8), "\n  "))
	}

	var injected []string
	for _, k := range proxy.Kinds {
		if d := after[k] - before[k]; d > 0 {
			injected = append(injected, fmt.Sprintf("%s=%d", k, d))
		}
	}
	if len(injected) == 0 {
		injected = []string{"none"}
	}
	bound := 0
	var list corev1.PodList
	if err := env.Client.List(ctx, &list, client.InNamespace(r.ns)); err == nil {
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
	}
	t.Logf("seed %d: %d/%d pods bound in %v; operator goroutines %d -> %d, RSS peak %d MiB; receiver answered 503 to %d of %d notices",
		seed, bound, numPods, took.Round(time.Millisecond), baseline.Goroutines, end.Goroutines, peak>>20, r.rec.Failed.Load(), r.rec.Requests.Load())
	t.Logf("faults injected: %s", strings.Join(injected, " "))
	if len(r.log) > 0 {
		t.Logf("disruptions: %s", strings.Join(r.log, "; "))
	}
	t.Logf("invariants:\n%s", checker.Report())
	if v, ok := checker.First(); ok {
		t.Fatalf("seed %d (replay: BINDGATE_FAULTS_SEED=%d): first violated invariant: %s (%d violations)", seed, seed, v, len(checker.Violations()))
	}
}

// sampleIdle waits until the operator's goroutine count is steady and
// returns the sample.
func sampleIdle(ctx context.Context, t *testing.T, o *faults.Operator) invariants.Process {
	t.Helper()
	var last invariants.Process
	steady := 0
	waitFor(ctx, t, time.Minute, "operator "+o.Name+" metrics steady", func() bool {
		s, err := o.Sample(ctx)
		if err != nil {
			steady = 0
			return false
		}
		if s.Goroutines == last.Goroutines {
			steady++
		} else {
			steady = 0
		}
		last = s
		return steady >= 3
	})
	return last
}

func waitFor(ctx context.Context, t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// createRetrying creates p directly on the API server, retrying while it
// restarts.
func createRetrying(ctx context.Context, p *corev1.Pod) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := cluster.Env.Client.Create(ctx, p.DeepCopy())
		return err == nil, nil
	})
}

func approveAll(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	var list corev1.PodList
	if err := cluster.Env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		err := retry.OnError(retry.DefaultBackoff, func(error) bool { return true }, func() error {
			patch := []byte(`{"metadata":{"annotations":{"example.com/approved":"true"}}}`)
			return cluster.Env.Client.Patch(ctx, &p, client.RawPatch("application/merge-patch+json", patch))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// writes matches the writes (create, update, patch, delete).
func writes(r proxy.Request) bool { return r.Write() }

// bindAndGateLift matches the bind (pods/binding) and the pod writes that
// lift the gate.
func bindAndGateLift(r proxy.Request) bool {
	return r.Resource == "pods" && (r.Subresource == "binding" || (r.Subresource == "" && (r.Verb == "update" || r.Verb == "patch")))
}

func TestWriteErrors(t *testing.T) {
	runScenario(t, scenario{pods: 60, rules: []proxy.Rule{
		{Kind: proxy.ServerError, Rate: 0.04, Match: writes},
		{Kind: proxy.Conflict, Rate: 0.03},
		{Kind: proxy.Throttle, Rate: 0.03, Match: writes},
	}})
}

func TestTimeoutAfterApplyOnBindAndGateLift(t *testing.T) {
	runScenario(t, scenario{pods: 60, rules: []proxy.Rule{
		{Kind: proxy.TimeoutAfterApply, Rate: 0.3, Match: bindAndGateLift},
	}})
}

// policyStatus matches the writes of the policies' status (the ledger's
// reservation records and releases).
func policyStatus(r proxy.Request) bool {
	return r.Resource == "bindingpolicies" && r.Subresource == "status"
}

// TestTimeoutAfterApplyOnReservationRecords: pods wait in Permit, so every
// reservation is recorded before it waits; 30% of the policy's status
// writes are applied, then answered 504.
func TestTimeoutAfterApplyOnReservationRecords(t *testing.T) {
	runScenario(t, scenario{pods: 60, permit: true, rules: []proxy.Rule{
		{Kind: proxy.TimeoutAfterApply, Rate: 0.3, Match: policyStatus},
	}})
}

func TestWatchCuts(t *testing.T) {
	runScenario(t, scenario{pods: 60, rules: []proxy.Rule{
		{Kind: proxy.WatchCut, Rate: 1},
		{Kind: proxy.Latency, Rate: 0.2},
		{Kind: proxy.Reset, Rate: 0.005},
	}})
}

func TestAPIServerRestartAndFreeze(t *testing.T) {
	runScenario(t, scenario{pods: 60, disrupt: func(ctx context.Context, r *run) {
		if !sleep(ctx, r.duration(500*time.Millisecond, 2*time.Second)) {
			return
		}
		r.logf("kube-apiserver restarted")
		if err := cluster.Env.RestartAPIServer(); err != nil {
			r.t.Error(err)
			return
		}
		if !sleep(ctx, r.duration(500*time.Millisecond, 2*time.Second)) {
			return
		}
		if err := cluster.Env.SignalAPIServer(syscall.SIGSTOP); err != nil {
			r.t.Error(err)
			return
		}
		freeze := r.duration(2*time.Second, 5*time.Second)
		sleep(ctx, freeze)
		if err := cluster.Env.SignalAPIServer(syscall.SIGCONT); err != nil {
			r.t.Error(err)
		}
		r.logf("kube-apiserver frozen (SIGSTOP) for %v", freeze.Round(time.Millisecond))
	}})
}

func TestOperatorKilled(t *testing.T) {
	runScenario(t, scenario{pods: 80, rules: []proxy.Rule{{Kind: proxy.ServerError, Rate: 0.02, Match: writes}}, disrupt: func(ctx context.Context, r *run) {
		for i := range 10 {
			if !sleep(ctx, r.duration(300*time.Millisecond, 2500*time.Millisecond)) {
				return
			}
			for _, o := range r.live() {
				o.Kill()
			}
			r.logf("SIGKILL %d", i+1)
			r.startOperator()
		}
	}})
}

// leader returns the live operator that holds the lease.
func leader(ctx context.Context, t *testing.T, r *run) *faults.Operator {
	t.Helper()
	var l *faults.Operator
	waitFor(ctx, t, time.Minute, "a leader", func() bool {
		for _, o := range r.live() {
			if o.Leader(ctx) {
				l = o
				return true
			}
		}
		return false
	})
	return l
}

func TestLeaderKilled(t *testing.T) {
	runScenario(t, scenario{pods: 60, replicas: 2, args: []string{"--leader-elect=true"},
		rules: []proxy.Rule{{Kind: proxy.Latency, Rate: 0.1}},
		disrupt: func(ctx context.Context, r *run) {
			l := leader(ctx, r.t, r)
			if !sleep(ctx, r.duration(time.Second, 3*time.Second)) {
				return
			}
			l.Kill()
			r.logf("leader %s SIGKILLed", l.Name)
			r.startOperator() // its replacement, as a Deployment does
			n := leader(ctx, r.t, r)
			r.logf("%s took over", n.Name)
		}})
}

// TestRollingUpdate: a new replica starts, then the old leader gets SIGTERM
// while it binds (a Deployment's rolling update); it releases the lease
// and the new one finishes.
func TestRollingUpdate(t *testing.T) {
	runScenario(t, scenario{pods: 80, args: []string{"--leader-elect=true"},
		rules: []proxy.Rule{{Kind: proxy.Latency, Rate: 0.3}},
		disrupt: func(ctx context.Context, r *run) {
			for i := range 2 {
				old := leader(ctx, r.t, r)
				r.startOperator()
				if !sleep(ctx, r.duration(500*time.Millisecond, 2*time.Second)) {
					return
				}
				if err := old.Stop(30 * time.Second); err != nil {
					r.t.Errorf("SIGTERM: %v", err)
				}
				r.logf("rollout %d: %s stopped by SIGTERM", i+1, old.Name)
			}
		}})
}

// TestNodesGoWhilePodsWaitInPermit: pods reserve and wait for an approval;
// meanwhile one of their nodes is deleted and another cordoned. Once
// approved, every pod binds to a node that is there and schedulable, and
// no reservation stays behind.
func TestNodesGoWhilePodsWaitInPermit(t *testing.T) {
	runScenario(t, scenario{pods: 40, permit: true,
		rules: []proxy.Rule{{Kind: proxy.ServerError, Rate: 0.03, Match: writes}},
		disrupt: func(ctx context.Context, r *run) {
			waitReserved(ctx, r, 20)
			cordon, del := r.nodes[0], r.nodes[1]
			n := &corev1.Node{}
			if err := cluster.Env.Client.Get(ctx, client.ObjectKey{Name: cordon}, n); err != nil {
				r.t.Error(err)
				return
			}
			n.Spec.Unschedulable = true
			if err := cluster.Env.Client.Update(ctx, n); err != nil {
				r.t.Error(err)
				return
			}
			if err := cluster.Env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: del}}); err != nil {
				r.t.Error(err)
				return
			}
			r.logf("node %s cordoned, node %s deleted with pods reserved on them", cordon, del)
			// Room for every pod on the nodes left.
			for i := range 2 {
				name := fmt.Sprintf("%s-extra%d", r.policy, i)
				if err := cluster.CreateNode(ctx, name, 4, map[string]string{"pool": r.policy}); err != nil {
					r.t.Error(err)
					return
				}
				r.nodes = append(r.nodes, name)
			}
		}})
}

// waitReserved waits until the run's policy records at least n
// reservations.
func waitReserved(ctx context.Context, r *run, n int) {
	waitFor(ctx, r.t, 2*time.Minute, fmt.Sprintf("%d reservations of %s", n, r.policy), func() bool {
		p := &bindgatev1alpha1.BindingPolicy{}
		return cluster.Env.Client.Get(ctx, client.ObjectKey{Name: r.policy}, p) == nil && len(p.Status.Reservations) >= n
	})
}

// TestPolicyEditedWhilePodsReserved: pods reserve under a policy and wait
// for approval; the policy's nodeSelector moves to another pool. Every pod
// ends bound inside the new pool, none inside the old one.
func TestPolicyEditedWhilePodsReserved(t *testing.T) {
	runScenario(t, scenario{pods: 40, permit: true,
		rules: []proxy.Rule{{Kind: proxy.Conflict, Rate: 0.05}},
		disrupt: func(ctx context.Context, r *run) {
			waitReserved(ctx, r, 20)
			newPool := r.policy + "-moved"
			// As many nodes as the first pool: room for every pod (with
			// BINDGATE_FAULTS=full too; four nodes held half of its 160).
			for i := range len(r.nodes) {
				name := fmt.Sprintf("%s-moved%d", r.policy, i)
				if err := cluster.CreateNode(ctx, name, 4, map[string]string{"pool": newPool}); err != nil {
					r.t.Error(err)
					return
				}
				r.nodes = append(r.nodes, name)
			}
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				p := &bindgatev1alpha1.BindingPolicy{}
				if err := cluster.Env.Client.Get(ctx, client.ObjectKey{Name: r.policy}, p); err != nil {
					return err
				}
				p.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": newPool}}
				return cluster.Env.Client.Update(ctx, p)
			})
			if err != nil {
				r.t.Error(err)
				return
			}
			r.logf("policy %s nodeSelector moved to pool %s with pods reserved", r.policy, newPool)
		},
		extraChecks: func(ctx context.Context, r *run) {
			var list corev1.PodList
			if err := cluster.Env.Client.List(ctx, &list, client.InNamespace(r.ns)); err != nil {
				r.t.Fatal(err)
			}
			for _, p := range list.Items {
				if p.Spec.NodeName != "" && !strings.Contains(p.Spec.NodeName, "-moved") {
					r.t.Errorf("pod %s bound to %s, outside the policy's new pool", p.Name, p.Spec.NodeName)
				}
			}
		}})
}

// TestPolicyDeletedWhilePodsReserved: pods reserve under a policy and wait;
// the policy is deleted. No pod binds, each says why, and nothing of the
// policy's reservations is left to hold capacity.
func TestPolicyDeletedWhilePodsReserved(t *testing.T) {
	runScenario(t, scenario{pods: 30, permit: true, notAllBound: true,
		rules: []proxy.Rule{{Kind: proxy.ServerError, Rate: 0.03, Match: writes}},
		disrupt: func(ctx context.Context, r *run) {
			waitReserved(ctx, r, 15)
			if err := cluster.Env.Client.Delete(ctx, &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: r.policy}}); err != nil {
				r.t.Error(err)
				return
			}
			r.logf("policy %s deleted with pods reserved", r.policy)
		},
		extraChecks: func(ctx context.Context, r *run) {
			var list corev1.PodList
			if err := cluster.Env.Client.List(ctx, &list, client.InNamespace(r.ns)); err != nil {
				r.t.Fatal(err)
			}
			for _, p := range list.Items {
				if p.Spec.NodeName != "" {
					r.t.Errorf("pod %s bound to %s after its policy was deleted", p.Name, p.Spec.NodeName)
				}
			}
		}})
}
