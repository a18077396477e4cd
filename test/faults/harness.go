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

// Package faults runs bindgate, built from this repository and started as
// its own process, against a real kube-apiserver behind the
// fault-injecting proxy (internal/testenv/faults), and checks the
// invariants (internal/testenv/invariants) from the API server directly.
// The fault scenarios (make test-faults) and the soak run (make soak) are
// built on it.
package faults

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv"
	proxy "github.com/bindgate/bindgate/internal/testenv/faults"
	"github.com/bindgate/bindgate/internal/testenv/invariants"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// OperatorNamespace holds the operator's Secrets (seal key, hook secret)
// and its leader election Lease.
const OperatorNamespace = metav1.NamespaceDefault

// HookSecret signs the PostBind notices.
const HookSecret = "faults-hook-secret"

// Cluster is a control plane that can be restarted, a proxy in front of it
// and the operator binary.
type Cluster struct {
	Env        *testenv.Env
	Proxy      *proxy.Proxy
	Kubeconfig string // the proxy's
	Binary     string
	Dir        string
	seq        atomic.Int64
}

// NewCluster starts a restartable control plane and a proxy configured
// with pc (faults come with SetRules), builds the operator into dir and
// creates the hook Secret.
func NewCluster(ctx context.Context, dir string, pc proxy.Config) (*Cluster, error) {
	env, err := testenv.Start(testenv.WithRestartableAPIServer())
	if err != nil {
		return nil, err
	}
	c := &Cluster{Env: env, Dir: dir}
	if c.Proxy, err = proxy.Start(env.Config, pc); err != nil {
		_ = env.Stop()
		return nil, err
	}
	if c.Kubeconfig, err = c.Proxy.WriteKubeconfig(dir); err != nil {
		c.Close()
		return nil, err
	}
	c.Binary = filepath.Join(dir, "bindgate")
	build := exec.CommandContext(ctx, "go", "build", "-o", c.Binary, ".")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		c.Close()
		return nil, fmt.Errorf("building the operator: %w\n%s", err, out)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: OperatorNamespace, Name: "hook-secret"}, Data: map[string][]byte{"key": []byte(HookSecret)}}
	if err := env.Client.Create(ctx, secret); err != nil {
		c.Close()
		return nil, fmt.Errorf("creating the hook secret: %w", err)
	}
	return c, nil
}

// Close stops everything.
func (c *Cluster) Close() {
	if c.Proxy != nil {
		_ = c.Proxy.Close()
	}
	_ = c.Env.Stop()
}

// Name returns a unique name.
func (c *Cluster) Name(prefix string) string { return fmt.Sprintf("%s-%d", prefix, c.seq.Add(1)) }

// Operator is one operator process.
type Operator struct {
	Name    string
	cmd     *exec.Cmd
	metrics string
	pprof   string
	Log     string
	done    chan struct{}
	err     error
}

// StartOperator runs the operator binary against the proxy with
// leader election off unless args turn it on.
func (c *Cluster) StartOperator(name string, args ...string) (*Operator, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	pprof, err := freeAddr()
	if err != nil {
		return nil, err
	}
	o := &Operator{Name: name, metrics: addr, pprof: pprof, Log: filepath.Join(c.Dir, name+".log"), done: make(chan struct{})}
	all := append([]string{
		"--kubeconfig=" + c.Kubeconfig, "--leader-elect=false", "--leader-election-namespace=" + OperatorNamespace,
		"--operator-namespace=" + OperatorNamespace, "--metrics-bind-address=" + addr, "--metrics-secure=false",
		"--health-probe-bind-address=0", "--webhook-allowed-cidrs=127.0.0.0/8", "--zap-log-level=info",
		"--webhook-base-backoff=200ms", "--pprof-bind-address=" + pprof,
	}, args...)
	// BINDGATE_FAULTS_OPERATOR_ARGS adds flags (e.g. --zap-log-level=4).
	all = append(all, strings.Fields(os.Getenv("BINDGATE_FAULTS_OPERATOR_ARGS"))...)
	o.cmd = exec.Command(c.Binary, all...) //nolint:noctx // the process is stopped by signals, as a kubelet does
	logf, err := os.OpenFile(o.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	o.cmd.Stdout, o.cmd.Stderr = logf, logf
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := o.cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("starting the operator: %w", err)
	}
	go func() {
		o.err = o.cmd.Wait()
		_ = logf.Close()
		close(o.done)
	}()
	return o, nil
}

// Signal sends sig to the operator.
func (o *Operator) Signal(sig syscall.Signal) error { return o.cmd.Process.Signal(sig) }

// Kill SIGKILLs the operator and waits for it to exit.
func (o *Operator) Kill() {
	_ = o.cmd.Process.Signal(syscall.SIGKILL)
	<-o.done
}

// Stop sends SIGTERM and waits up to timeout for a clean exit (then kills).
func (o *Operator) Stop(timeout time.Duration) error {
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-o.done:
		return o.err
	case <-time.After(timeout):
		o.Kill()
		return fmt.Errorf("operator %s did not exit within %v of SIGTERM", o.Name, timeout)
	}
}

// Exited reports whether the process has exited.
func (o *Operator) Exited() bool {
	select {
	case <-o.done:
		return true
	default:
		return false
	}
}

func freeAddr() (string, error) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// Metrics reads the operator's /metrics page.
func (o *Operator) Metrics(ctx context.Context) ([]byte, error) {
	return testenv.Get(ctx, "http://"+o.metrics+"/metrics")
}

// Goroutines reads the operator's goroutine profile (stacks with counts).
func (o *Operator) Goroutines(ctx context.Context) ([]byte, error) {
	return testenv.Get(ctx, "http://"+o.pprof+"/debug/pprof/goroutine?debug=1")
}

// Sample reads the operator's goroutines and RSS.
func (o *Operator) Sample(ctx context.Context) (invariants.Process, error) {
	page, err := o.Metrics(ctx)
	if err != nil {
		return invariants.Process{}, err
	}
	g, ok1, err1 := testenv.Metric(page, "go_goroutines")
	rss, ok2, err2 := testenv.Metric(page, "process_resident_memory_bytes")
	if err := errors.Join(err1, err2); err != nil {
		return invariants.Process{}, err
	}
	if !ok1 || !ok2 {
		return invariants.Process{}, fmt.Errorf("no go_goroutines or process_resident_memory_bytes on %s/metrics", o.metrics)
	}
	return invariants.Process{Goroutines: int(g), RSS: int64(rss)}, nil
}

// Leader reports whether the operator holds the leader election lease.
func (o *Operator) Leader(ctx context.Context) bool {
	page, err := o.Metrics(ctx)
	if err != nil {
		return false
	}
	v, ok, err := testenv.Metric(page, "leader_election_master_status")
	return err == nil && ok && v == 1
}

// Tail returns the last n lines of the operator's log.
func (o *Operator) Tail(n int) string {
	b, _ := os.ReadFile(o.Log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Receiver is a PostBind webhook receiver that verifies signatures and
// records every notice id per subject (namespace/pod); it fails a
// fraction of the requests with 503.
type Receiver struct {
	srv      *httptest.Server
	failRate atomic.Uint64 // math.Float64bits
	mu       sync.Mutex
	rng      *rand.Rand
	ids      map[string][]string
	Requests atomic.Int64
	Failed   atomic.Int64
}

// NewReceiver starts a receiver; failRate is the fraction answered 503.
func NewReceiver(seed uint64, failRate float64) *Receiver {
	r := &Receiver{ids: map[string][]string{}, rng: rand.New(rand.NewPCG(seed, 0xb0b))}
	r.SetFailRate(failRate)
	r.srv = httptest.NewUnstartedServer(r)
	r.srv.Config.ErrorLog = nil
	r.srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	r.srv.StartTLS()
	return r
}

// SetFailRate changes the fraction answered 503.
func (r *Receiver) SetFailRate(f float64) { r.failRate.Store(uint64(f * 1e6)) }

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.Requests.Add(1)
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if err := webhookclient.Verify([]byte(HookSecret), req.Header, body, 0); err != nil {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev webhookclient.PodBoundEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	fail := r.rng.Float64() < float64(r.failRate.Load())/1e6
	if !fail {
		r.ids[ev.Subject] = append(r.ids[ev.Subject], ev.ID)
	}
	r.mu.Unlock()
	if fail {
		r.Failed.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Delivered returns the ids delivered per subject.
func (r *Receiver) Delivered() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]string, len(r.ids))
	for k, v := range r.ids {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// Hook is a PostBind webhook of the receiver.
func (r *Receiver) Hook(name string, maxAttempts int32) bindgatev1alpha1.PostBindWebhook {
	return bindgatev1alpha1.PostBindWebhook{
		Name: name, MaxAttempts: maxAttempts,
		Webhook: bindgatev1alpha1.Webhook{
			URL: r.srv.URL + "/" + name, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw}),
			Timeout:          &metav1.Duration{Duration: 2 * time.Second},
			SigningSecretRef: &bindgatev1alpha1.SecretKeyRef{Name: "hook-secret", Key: "key"},
		},
	}
}

// CreateNode creates a Ready node with cpu CPUs and the labels.
func (c *Cluster) CreateNode(ctx context.Context, name string, cpu int, labels map[string]string) error {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	for k, v := range labels {
		n.Labels[k] = v
	}
	n.Status = corev1.NodeStatus{
		Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: *resource.NewQuantity(int64(cpu), resource.DecimalSI), corev1.ResourceMemory: resource.MustParse("16Gi"),
			corev1.ResourcePods: resource.MustParse("110"),
		},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
	}
	n.Status.Capacity = n.Status.Allocatable
	return c.Env.AddNode(ctx, n)
}

// Pod is a gated pod of policy requesting cpu milli-CPUs.
func Pod(ns, name, policy string, milliCPU int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{bindgatev1alpha1.PolicyLabel: policy, "app": policy}},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}},
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milliCPU, resource.DecimalSI), corev1.ResourceMemory: resource.MustParse("64Mi")},
			}}},
		},
	}
}

// CreateNamespace creates a namespace.
func (c *Cluster) CreateNamespace(ctx context.Context, name string) error {
	return c.Env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// GrownStacks compares two goroutine profiles (debug=1) and returns the
// stacks whose count grew most, most first, as "+N: frames".
func GrownStacks(before, after []byte, top int) []string {
	parse := func(b []byte) map[string]int {
		out := map[string]int{}
		for _, block := range strings.Split(string(b), "\n\n") {
			lines := strings.Split(strings.TrimSpace(block), "\n")
			if len(lines) < 2 {
				continue
			}
			n, err := strconv.Atoi(strings.Fields(lines[0])[0])
			if err != nil {
				continue
			}
			var frames []string
			for _, l := range lines[1:] {
				if f := strings.Fields(l); len(f) >= 3 && f[0] == "#" {
					frames = append(frames, f[2])
				}
			}
			out[strings.Join(frames, " < ")] += n
		}
		return out
	}
	b, a := parse(before), parse(after)
	type grown struct {
		stack string
		n     int
	}
	var g []grown
	for s, n := range a {
		if d := n - b[s]; d > 0 {
			g = append(g, grown{s, d})
		}
	}
	sort.Slice(g, func(i, j int) bool { return g[i].n > g[j].n })
	var out []string
	for i := 0; i < len(g) && i < top; i++ {
		out = append(out, fmt.Sprintf("+%d: %s", g[i].n, g[i].stack))
	}
	return out
}
