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

// Command soak runs bindgate (its own process, built from this repository)
// for a bounded time against a real API server behind the fault-injecting
// proxy, with a steady stream of pods created and deleted across several
// policies (plain, gangs, manual approvals; every one with a PostBind
// webhook that sometimes fails), node churn and a low rate of API faults,
// checking the invariants throughout. It prints a one-screen summary and
// writes summary.txt, samples.csv and soak.png into --out. It exits 1 when
// an invariant was violated.
package main

import (
	"context"
	"flag"
	"fmt"
	"image/color"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	proxy "github.com/bindgate/bindgate/internal/testenv/faults"
	"github.com/bindgate/bindgate/internal/testenv/invariants"
	"github.com/bindgate/bindgate/test/faults"
)

const approvedExpr = `has(pod.metadata.annotations) && pod.metadata.annotations[?'example.com/approved'].orValue('') == 'true'`

type options struct {
	duration   time.Duration
	seed       uint64
	out        string
	rate       float64
	nodes      int
	faultRate  float64
	sampleEach time.Duration
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 30*time.Minute, "How long pods are created (then the run settles and is checked).")
	flag.Uint64Var(&o.seed, "seed", 0, "Seed of every random choice; 0 picks one from the clock (printed).")
	flag.StringVar(&o.out, "out", "soak-out", "Folder for summary.txt, samples.csv, soak.png and the operator log.")
	flag.Float64Var(&o.rate, "rate", 2, "Pods created per second.")
	flag.IntVar(&o.nodes, "nodes", 10, "Nodes (8 CPUs each); one is replaced or cordoned every 30s.")
	flag.Float64Var(&o.faultRate, "fault-rate", 0.01, "Fraction of requests each API fault kind hits.")
	flag.DurationVar(&o.sampleEach, "sample", 10*time.Second, "How often the operator and the cluster are sampled.")
	flag.Parse()
	if o.duration <= 0 || o.rate <= 0 || o.nodes < 3 || o.faultRate < 0 || o.faultRate > 1 {
		fmt.Fprintln(os.Stderr, "want --duration > 0, --rate > 0, --nodes >= 3, --fault-rate in [0, 1]")
		os.Exit(2)
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// sample is one point of the run.
type sample struct {
	t          time.Duration
	bound      int
	live       int
	rss        int64
	goroutines int
	faults     int64
}

type soak struct {
	o       options
	c       *faults.Cluster
	rng     *rand.Rand
	mu      sync.Mutex
	created map[string]time.Time // ns/name -> created
	latency map[string][]time.Duration
	bound   map[string]bool
	nodes   []string
	nodeSeq int
	churn   []string
	// uncordons are the pending ends of cordons.
	uncordons sync.WaitGroup
}

func run(ctx context.Context, o options) (int, error) {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return 1, err
	}
	dir, err := os.MkdirTemp("", "bindgate-soak-")
	if err != nil {
		return 1, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	fmt.Printf("soak: seed %d, %v of pods at %.1f/s on %d nodes, fault rate %.3f; building the operator and starting a control plane...\n",
		o.seed, o.duration, o.rate, o.nodes, o.faultRate)
	c, err := faults.NewCluster(ctx, dir, proxy.Config{Seed: o.seed, WatchCutMin: 20 * time.Second, WatchCutMax: 90 * time.Second,
		TimeoutAfterApplyDelay: 200 * time.Millisecond})
	if err != nil {
		return 1, err
	}
	defer c.Close()
	s := &soak{o: o, c: c, rng: rand.New(rand.NewPCG(o.seed, 3)), created: map[string]time.Time{}, latency: map[string][]time.Duration{}, bound: map[string]bool{}}

	ns := "soak"
	if err := c.CreateNamespace(ctx, ns); err != nil {
		return 1, err
	}
	for range o.nodes {
		if err := s.addNode(ctx); err != nil {
			return 1, err
		}
	}
	rec := faults.NewReceiver(o.seed, 0.1)
	defer rec.Close()
	policies := []string{"plain", "gang", "approval"}
	for _, name := range policies {
		p := &bindgatev1alpha1.BindingPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: bindgatev1alpha1.BindingPolicySpec{
				NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "soak"}},
				PostBind:     []bindgatev1alpha1.PostBindWebhook{rec.Hook("audit", 20)},
			},
		}
		switch name {
		case "gang":
			p.Spec.Permit = &bindgatev1alpha1.Permit{Timeout: &metav1.Duration{Duration: 5 * time.Minute},
				Conditions: []bindgatev1alpha1.PermitCondition{{Name: "gang", Gang: &bindgatev1alpha1.GangCondition{MinMember: 3}}}}
		case "approval":
			p.Spec.Permit = &bindgatev1alpha1.Permit{Timeout: &metav1.Duration{Duration: 5 * time.Minute},
				Conditions: []bindgatev1alpha1.PermitCondition{{Name: "approved", Expression: approvedExpr}}}
		}
		if err := c.Env.Client.Create(ctx, p); err != nil {
			return 1, fmt.Errorf("creating policy %s: %w", name, err)
		}
	}
	checker, err := invariants.Start(ctx, c.Env.Clientset, c.Env.Client, ns)
	if err != nil {
		return 1, err
	}
	defer checker.Stop()
	s.watchBinds(ctx, ns)

	writes := func(r proxy.Request) bool { return r.Write() }
	// The bind, the writes that lift the gate, and the policies' status
	// (the ledger's records and releases).
	appliedThenTimeout := func(r proxy.Request) bool {
		return r.Resource == "pods" && (r.Subresource == "binding" || (r.Subresource == "" && (r.Verb == "update" || r.Verb == "patch"))) ||
			r.Resource == "bindingpolicies" && r.Subresource == "status"
	}
	if err := c.Proxy.SetRules([]proxy.Rule{
		{Kind: proxy.ServerError, Rate: o.faultRate, Match: writes},
		{Kind: proxy.Conflict, Rate: o.faultRate / 2},
		{Kind: proxy.Throttle, Rate: o.faultRate},
		{Kind: proxy.TimeoutAfterApply, Rate: o.faultRate, Match: appliedThenTimeout},
		{Kind: proxy.Latency, Rate: o.faultRate * 5},
		{Kind: proxy.WatchCut, Rate: min(1, o.faultRate*50)},
		{Kind: proxy.Reset, Rate: o.faultRate / 10},
	}); err != nil {
		return 1, err
	}
	op, err := c.StartOperator("operator", "--leader-elect=true")
	if err != nil {
		return 1, err
	}
	defer func() { _ = op.Stop(30 * time.Second) }()
	for ctx.Err() == nil && !op.Leader(ctx) {
		time.Sleep(time.Second)
	}
	time.Sleep(3 * time.Second)
	startSample, err := op.Sample(ctx)
	if err != nil {
		return 1, err
	}

	start := time.Now()
	var samples []sample
	var peak int64
	sampleOnce := func() {
		p, err := op.Sample(ctx)
		if err != nil {
			return
		}
		peak = max(peak, p.RSS)
		s.mu.Lock()
		bound, live := len(s.bound), len(s.created)
		s.mu.Unlock()
		samples = append(samples, sample{t: time.Since(start), bound: bound, live: live, rss: p.RSS, goroutines: p.Goroutines, faults: c.Proxy.Injected()})
	}
	sampleOnce()

	runCtx, stopRun := context.WithTimeout(ctx, o.duration)
	var wg sync.WaitGroup
	wg.Go(func() { s.createPods(runCtx, ns) })
	wg.Go(func() { s.approve(runCtx, ns) })
	wg.Go(func() { s.deleteOld(runCtx, ns) })
	wg.Go(func() { s.churnNodes(runCtx, ns) })
	ticker := time.NewTicker(o.sampleEach)
	for done := false; !done; {
		select {
		case <-runCtx.Done():
			done = true
		case <-ticker.C:
			sampleOnce()
			if len(samples)%6 == 0 {
				last := samples[len(samples)-1]
				fmt.Printf("  %6s  bound %6d  live %4d  RSS %4d MiB  goroutines %4d  faults %d\n",
					last.t.Round(time.Second), last.bound, last.live, last.rss>>20, last.goroutines, last.faults)
			}
		}
	}
	ticker.Stop()
	stopRun()
	wg.Wait()
	s.uncordons.Wait()
	if ctx.Err() != nil {
		return 1, ctx.Err()
	}
	// Waiting approvals are given, the faults stop, and the run settles.
	s.approveAll(ctx, ns)
	injected := c.Proxy.Counts()
	_ = c.Proxy.SetRules(nil)
	fmt.Println("soak: settling and checking the invariants...")
	if err := checker.Final(ctx, invariants.Expect{AllBound: true, Settle: 5 * time.Minute, PostBindHook: "audit", Delivered: rec.Delivered}); err != nil {
		return 1, err
	}
	sampleOnce()
	// Idle: the pods are deleted and the operator settles.
	if err := c.Env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)); err != nil {
		return 1, err
	}
	time.Sleep(30 * time.Second)
	end, err := op.Sample(ctx)
	if err != nil {
		return 1, err
	}
	peak = max(peak, end.RSS)
	checker.CheckProcess(startSample, end, peak, 150, 1<<30)

	summary := s.summary(checker, injected, startSample, end, peak, time.Since(start), rec)
	fmt.Print(summary)
	if err := os.WriteFile(filepath.Join(o.out, "summary.txt"), []byte(summary), 0o644); err != nil {
		return 1, err
	}
	if err := writeCSV(filepath.Join(o.out, "samples.csv"), samples); err != nil {
		return 1, err
	}
	if err := plotSamples(filepath.Join(o.out, "soak.png"), samples); err != nil {
		return 1, err
	}
	if b, err := os.ReadFile(op.Log); err == nil {
		_ = os.WriteFile(filepath.Join(o.out, "operator.log"), b, 0o644)
	}
	if _, bad := checker.First(); bad {
		return 1, nil
	}
	return 0, nil
}

func (s *soak) addNode(ctx context.Context) error {
	s.mu.Lock()
	s.nodeSeq++
	name := fmt.Sprintf("soak-n%03d", s.nodeSeq)
	s.nodes = append(s.nodes, name)
	s.mu.Unlock()
	return s.c.CreateNode(ctx, name, 8, map[string]string{"pool": "soak"})
}

// watchBinds records when each pod is seen bound (from the API server).
func (s *soak) watchBinds(ctx context.Context, ns string) {
	f := informers.NewSharedInformerFactoryWithOptions(s.c.Env.Clientset, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) {
		p, ok := o.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		key := p.Namespace + "/" + p.Name
		s.mu.Lock()
		defer s.mu.Unlock()
		if t, ok := s.created[key]; ok && !s.bound[key] {
			s.bound[key] = true
			policy := p.Labels[bindgatev1alpha1.PolicyLabel]
			s.latency[policy] = append(s.latency[policy], time.Since(t))
		}
	}})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
}

func (s *soak) createPods(ctx context.Context, ns string) {
	every := time.Duration(float64(time.Second) / s.o.rate)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	seq := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		s.mu.Lock()
		k := s.rng.IntN(10)
		mcpu := int64(100 + 50*s.rng.IntN(5))
		s.mu.Unlock()
		var pods []*corev1.Pod
		switch {
		case k < 5:
			pods = append(pods, faults.Pod(ns, fmt.Sprintf("plain-%05d", seq), "plain", mcpu))
		case k < 7:
			for i := range 3 {
				p := faults.Pod(ns, fmt.Sprintf("gang-%05d-%d", seq, i), "gang", mcpu)
				p.Labels[bindgatev1alpha1.GroupLabel] = fmt.Sprintf("g-%05d", seq)
				pods = append(pods, p)
			}
		default:
			pods = append(pods, faults.Pod(ns, fmt.Sprintf("approval-%05d", seq), "approval", mcpu))
		}
		seq++
		for _, p := range pods {
			key := p.Namespace + "/" + p.Name
			s.mu.Lock()
			s.created[key] = time.Now()
			s.mu.Unlock()
			if err := s.c.Env.Client.Create(ctx, p); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "soak: creating", key, err)
				s.mu.Lock()
				delete(s.created, key)
				s.mu.Unlock()
			}
		}
	}
}

// approve approves the waiting approval pods after 0-5s.
func (s *soak) approve(ctx context.Context, ns string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		s.approveAll(ctx, ns)
	}
}

func (s *soak) approveAll(ctx context.Context, ns string) {
	var list corev1.PodList
	if err := s.c.Env.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{bindgatev1alpha1.PolicyLabel: "approval"}); err != nil {
		return
	}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.NodeName != "" || p.Annotations["example.com/approved"] == "true" {
			continue
		}
		patch := []byte(`{"metadata":{"annotations":{"example.com/approved":"true"}}}`)
		_ = s.c.Env.Client.Patch(ctx, p, client.RawPatch("application/merge-patch+json", patch))
	}
}

// deleteOld deletes bound pods 20-60s after they were created.
func (s *soak) deleteOld(ctx context.Context, ns string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		var list corev1.PodList
		if err := s.c.Env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			continue
		}
		for i := range list.Items {
			p := &list.Items[i]
			key := p.Namespace + "/" + p.Name
			s.mu.Lock()
			created, ok := s.created[key]
			life := time.Duration(20+s.rng.IntN(40)) * time.Second
			s.mu.Unlock()
			if !ok || p.Spec.NodeName == "" || time.Since(created) < life {
				continue
			}
			if err := s.c.Env.Client.Delete(ctx, p, client.GracePeriodSeconds(0)); err == nil {
				s.mu.Lock()
				delete(s.created, key)
				s.mu.Unlock()
			}
		}
	}
}

// churnNodes, every 30s, either cordons a node for 15s or replaces one
// (its pods are deleted with it, as when a node is drained and removed).
func (s *soak) churnNodes(ctx context.Context, ns string) {
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(30 * time.Second):
		}
		s.mu.Lock()
		victim := s.nodes[s.rng.IntN(len(s.nodes))]
		s.mu.Unlock()
		if i%2 == 0 {
			s.setUnschedulable(ctx, victim, true)
			s.churn = append(s.churn, "cordon "+victim)
			s.uncordons.Go(func() {
				time.Sleep(15 * time.Second)
				s.setUnschedulable(context.WithoutCancel(ctx), victim, false)
			})
			continue
		}
		if err := s.c.Env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: victim}}); err != nil {
			continue
		}
		// Its pods go, as the pod garbage collector removes the pods of a
		// deleted node; a bind in flight when the node went has 5s to land.
		s.uncordons.Go(func() {
			time.Sleep(5 * time.Second)
			var list corev1.PodList
			if err := s.c.Env.Client.List(context.WithoutCancel(ctx), &list, client.InNamespace(ns)); err != nil {
				return
			}
			for j := range list.Items {
				if p := &list.Items[j]; p.Spec.NodeName == victim {
					if err := s.c.Env.Client.Delete(context.WithoutCancel(ctx), p, client.GracePeriodSeconds(0)); err == nil {
						s.mu.Lock()
						delete(s.created, p.Namespace+"/"+p.Name)
						s.mu.Unlock()
					}
				}
			}
		})
		s.mu.Lock()
		s.nodes = slices.DeleteFunc(s.nodes, func(n string) bool { return n == victim })
		s.mu.Unlock()
		s.churn = append(s.churn, "replace "+victim)
		if err := s.addNode(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "soak: adding a node:", err)
		}
	}
}

func (s *soak) setUnschedulable(ctx context.Context, name string, v bool) {
	n := &corev1.Node{}
	if err := s.c.Env.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return
	}
	n.Spec.Unschedulable = v
	_ = s.c.Env.Client.Update(ctx, n)
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	d = slices.Clone(d)
	slices.Sort(d)
	return d[min(len(d)-1, int(p*float64(len(d))))]
}

func (s *soak) summary(ch *invariants.Checker, injected map[proxy.Kind]int64, start, end invariants.Process, peak int64, took time.Duration, rec *faults.Receiver) string {
	var b strings.Builder
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []time.Duration
	policies := make([]string, 0, len(s.latency))
	for p, l := range s.latency {
		all = append(all, l...)
		policies = append(policies, p)
	}
	sort.Strings(policies)
	fmt.Fprintf(&b, "\n== bindgate soak run: seed %d, %v of pods (%v in all) ==\n", s.o.seed, s.o.duration, took.Round(time.Second))
	fmt.Fprintf(&b, "command: make soak SOAK_DURATION=%v SOAK_SEED=%d\n", s.o.duration, s.o.seed)
	fmt.Fprintf(&b, "pods bound: %d   gate-seen -> bound: p50 %v  p99 %v\n", len(s.bound), percentile(all, 0.5).Round(time.Millisecond), percentile(all, 0.99).Round(time.Millisecond))
	for _, p := range policies {
		fmt.Fprintf(&b, "  %-9s %6d bound  p50 %-8v p99 %v\n", p, len(s.latency[p]), percentile(s.latency[p], 0.5).Round(time.Millisecond), percentile(s.latency[p], 0.99).Round(time.Millisecond))
	}
	var total int64
	var kinds []string
	for _, k := range proxy.Kinds {
		total += injected[k]
		if injected[k] > 0 {
			kinds = append(kinds, fmt.Sprintf("%s=%d", k, injected[k]))
		}
	}
	fmt.Fprintf(&b, "faults injected: %d (%s) of %d requests\n", total, strings.Join(kinds, " "), s.c.Proxy.Requests())
	fmt.Fprintf(&b, "PostBind receiver: %d requests, %d answered 503\n", rec.Requests.Load(), rec.Failed.Load())
	cordons, replaced := 0, 0
	for _, c := range s.churn {
		if strings.HasPrefix(c, "cordon") {
			cordons++
		} else {
			replaced++
		}
	}
	fmt.Fprintf(&b, "node churn: %d cordoned for 15s, %d replaced\n", cordons, replaced)
	fmt.Fprintf(&b, "operator RSS: start %d MiB, peak %d MiB, end %d MiB; goroutines: start %d, end %d\n",
		start.RSS>>20, peak>>20, end.RSS>>20, start.Goroutines, end.Goroutines)
	fmt.Fprintf(&b, "invariant violations: %d\n", len(ch.Violations()))
	if v, ok := ch.First(); ok {
		fmt.Fprintf(&b, "first violated invariant: %s\n", v)
	}
	b.WriteString(ch.Report())
	return b.String()
}

func writeCSV(path string, samples []sample) error {
	var b strings.Builder
	b.WriteString("seconds,pods_bound,pods_live,rss_mib,goroutines,faults_injected\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "%.0f,%d,%d,%.1f,%d,%d\n", s.t.Seconds(), s.bound, s.live, float64(s.rss)/(1<<20), s.goroutines, s.faults)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// plotSamples draws pods bound and the operator's RSS over time, one
// panel above the other.
func plotSamples(path string, samples []sample) error {
	bound, rss := plot.New(), plot.New()
	bound.Title.Text = "bindgate soak run: pods bound"
	bound.Y.Label.Text = "pods bound (total)"
	rss.Title.Text = "operator memory"
	rss.Y.Label.Text = "RSS (MiB)"
	rss.X.Label.Text = "minutes"
	b, r := make(plotter.XYs, len(samples)), make(plotter.XYs, len(samples))
	for i, s := range samples {
		b[i].X, b[i].Y = s.t.Minutes(), float64(s.bound)
		r[i].X, r[i].Y = s.t.Minutes(), float64(s.rss)/(1<<20)
	}
	for _, l := range []struct {
		p   *plot.Plot
		xys plotter.XYs
		c   color.RGBA
	}{{bound, b, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}}, {rss, r, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}}} {
		line, err := plotter.NewLine(l.xys)
		if err != nil {
			return err
		}
		line.Color = l.c
		line.Width = vg.Points(2)
		l.p.Add(line)
	}
	rss.Y.Min = 0
	img := vgimg.New(8*vg.Inch, 6*vg.Inch)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadX: vg.Points(4), PadY: vg.Points(8)}
	canvases := plot.Align([][]*plot.Plot{{bound}, {rss}}, tiles, draw.New(img))
	bound.Draw(canvases[0][0])
	rss.Draw(canvases[1][0])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
