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

package controllers_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/controllers"
	"github.com/bindgate/bindgate/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	// The Workload API (PodGroups) is served, as on a cluster that enables
	// it, so that gangs from PodGroups are tested; without
	// TopologyAwareWorkloadScheduling the API server drops a PodGroup's
	// schedulingConstraints.
	testenv.Main(m, &env, testenv.WithAPIServerArgs(
		"feature-gates", "GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
		"runtime-config", "scheduling.k8s.io/v1beta1=true"))
}

func zapLevel() zapcore.Level {
	if os.Getenv("BINDGATE_TEST_VERBOSE") != "" {
		return -4
	}
	return zapcore.DPanicLevel // quiet: BINDGATE_TEST_VERBOSE=1 shows the operator logs
}

// operatorNamespace holds the seal key Secret of the test managers (every
// manager of the test process shares it, as replicas do).
const operatorNamespace = metav1.NamespaceDefault

// uniq names an object apart from every other of the test process.
var uniq = testenv.Uniq

// startManager runs the operator's controllers against the test API server
// until the returned stop function is called (or the test ends).
func startManager(t *testing.T, workers int, mutate ...func(*controllers.Options)) (stop func()) {
	t.Helper()
	return startManagerWithConfig(t, env.Config, workers, mutate...)
}

// startManagerAs runs the operator as user (impersonated, with the admin's
// rights), as the installs run it under its ServiceAccount.
func startManagerAs(t *testing.T, user string, workers int, mutate ...func(*controllers.Options)) (stop func()) {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters", "system:authenticated"}}
	return startManagerWithConfig(t, cfg, workers, mutate...)
}

func startManagerWithConfig(t *testing.T, cfg *rest.Config, workers int, mutate ...func(*controllers.Options)) (stop func()) {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Cache:                  controllers.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		// Several managers run in one test process.
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var opts controllers.Options
	opts.Workers = workers
	for _, m := range mutate {
		m(&opts)
	}
	if opts.Namespace == "" {
		opts.Namespace = operatorNamespace
	}
	if opts.AllowedWebhookCIDRs == nil {
		// The tests' webhook receivers listen on loopback, which the
		// operator refuses by default.
		opts.AllowedWebhookCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	}
	if err := controllers.SetupWithManager(ctx, mgr, opts); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	var once atomic.Bool
	stop = func() {
		if once.CompareAndSwap(false, true) {
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

// nodeBuilder builds a Ready, untainted node.
type nodeBuilder struct{ n *corev1.Node }

func newNode(name string) *nodeBuilder {
	return &nodeBuilder{n: &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
				corev1.ResourcePods: resource.MustParse("110"),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}}
}

func (b *nodeBuilder) label(k, v string) *nodeBuilder { b.n.Labels[k] = v; return b }
func (b *nodeBuilder) alloc(name corev1.ResourceName, q string) *nodeBuilder {
	b.n.Status.Allocatable[name] = resource.MustParse(q)
	return b
}
func (b *nodeBuilder) taint(k, v string, e corev1.TaintEffect) *nodeBuilder {
	b.n.Spec.Taints = append(b.n.Spec.Taints, corev1.Taint{Key: k, Value: v, Effect: e})
	return b
}
func (b *nodeBuilder) cordoned() *nodeBuilder { b.n.Spec.Unschedulable = true; return b }

// create creates the node (testenv.CreateNode).
func (b *nodeBuilder) create(t *testing.T) *corev1.Node {
	t.Helper()
	return env.CreateNode(t, b.n.DeepCopy())
}

// podBuilder builds a gated pod.
type podBuilder struct{ p *corev1.Pod }

func newPod(ns, name string) *podBuilder {
	return &podBuilder{p: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}},
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}},
		},
	}}
}

func (b *podBuilder) req(name corev1.ResourceName, q string) *podBuilder {
	b.p.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q)
	if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage {
		if b.p.Spec.Containers[0].Resources.Limits == nil {
			b.p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{}
		}
		b.p.Spec.Containers[0].Resources.Limits[name] = resource.MustParse(q)
	}
	return b
}
func (b *podBuilder) policy(name string) *podBuilder {
	b.p.Labels[bindgatev1alpha1.PolicyLabel] = name
	return b
}
func (b *podBuilder) label(k, v string) *podBuilder { b.p.Labels[k] = v; return b }
func (b *podBuilder) nodeSelector(k, v string) *podBuilder {
	if b.p.Spec.NodeSelector == nil {
		b.p.Spec.NodeSelector = map[string]string{}
	}
	b.p.Spec.NodeSelector[k] = v
	return b
}
func (b *podBuilder) tolerate(k string) *podBuilder {
	b.p.Spec.Tolerations = append(b.p.Spec.Tolerations, corev1.Toleration{Key: k, Operator: corev1.TolerationOpExists})
	return b
}

// schedulerName makes the pod name bindgate as its scheduler instead of
// carrying the gate (what the webhook's scheduler-name mode does).
func (b *podBuilder) schedulerName() *podBuilder {
	b.p.Spec.SchedulingGates = nil
	b.p.Spec.SchedulerName = bindgatev1alpha1.SchedulerName
	return b
}
func (b *podBuilder) gate(name string) *podBuilder {
	b.p.Spec.SchedulingGates = append(b.p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: name})
	return b
}
func (b *podBuilder) create(t *testing.T) *corev1.Pod {
	t.Helper()
	p := b.p.DeepCopy()
	if err := env.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func namespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniq("ns"), Labels: labels}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// pool is a policy whose nodeSelector picks nodes labelled pool=<name>.
func pool(t *testing.T, name string, mutate ...func(*bindgatev1alpha1.BindingPolicy)) *bindgatev1alpha1.BindingPolicy {
	t.Helper()
	p := &bindgatev1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: bindgatev1alpha1.BindingPolicySpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": name}},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	if err := env.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) })
	return p
}

// eventually polls cond every 50ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
	}
}

// consistently fails the test when cond turns false within d: the check
// before a negative assertion ("nothing more binds"), polled like
// eventually, never a bare sleep.
func consistently(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, d, true, func(context.Context) (bool, error) {
		if !cond() {
			return false, fmt.Errorf("no longer true: %s", what)
		}
		return false, nil
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatal(err)
	}
}

func listPods(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

func countBound(t *testing.T, ns string) int {
	n := 0
	for _, p := range listPods(t, ns) {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

func getPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// events returns "reason: message" for the pod's events.
func events(t *testing.T, ns, pod string) []string {
	t.Helper()
	var list corev1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == pod {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// eventTimes is how often reason was emitted for pod: the events API
// folds a repeat into the first Event's series (count 2 and up) instead of
// a second object, so counting objects cannot see repeats.
func eventTimes(t *testing.T, ns, pod, reason string) int {
	t.Helper()
	var list corev1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.InvolvedObject.Name != pod || e.Reason != reason {
			continue
		}
		switch {
		case e.Series != nil:
			n += int(max(e.Series.Count, 2))
		case e.Count > 1:
			n += int(e.Count)
		default:
			n++
		}
	}
	return n
}

func hasEvent(t *testing.T, ns, pod, reason, substr string) bool {
	for _, e := range events(t, ns, pod) {
		if strings.HasPrefix(e, reason+": ") && strings.Contains(e, substr) {
			return true
		}
	}
	return false
}

// assertNoOvercommit checks, from the API server, that no node's bound pods
// request more than its allocatable.
func assertNoOvercommit(t *testing.T) {
	t.Helper()
	var nodes corev1.NodeList
	if err := env.Client.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := env.Client.List(context.Background(), &pods); err != nil {
		t.Fatal(err)
	}
	used := map[string]corev1.ResourceList{}
	count := map[string]int64{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			continue
		}
		count[p.Spec.NodeName]++
		if used[p.Spec.NodeName] == nil {
			used[p.Spec.NodeName] = corev1.ResourceList{}
		}
		for _, c := range p.Spec.Containers {
			for k, v := range c.Resources.Requests {
				q := used[p.Spec.NodeName][k]
				q.Add(v)
				used[p.Spec.NodeName][k] = q
			}
		}
	}
	for _, n := range nodes.Items {
		for k, q := range used[n.Name] {
			if alloc, ok := n.Status.Allocatable[k]; ok && q.Cmp(alloc) > 0 {
				t.Errorf("node %s overcommitted on %s: requested %s > allocatable %s", n.Name, k, q.String(), alloc.String())
			}
		}
		if pods := n.Status.Allocatable[corev1.ResourcePods]; count[n.Name] > pods.Value() {
			t.Errorf("node %s holds %d pods > %d", n.Name, count[n.Name], pods.Value())
		}
	}
}
