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

// Command bench measures bindgate against kube-scheduler v1.37.2 and the raw
// pods/binding write ceiling on the same machine, each contender on a fresh
// real control plane (etcd + kube-apiserver built from pinned modules), with
// the nodes and pods created before the contender starts. Run it with
// `make bench`; it writes docs/benchmarks.md and docs/benchmarks.png.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv"
)

// Contenders.
const (
	Bindgate = "bindgate"
	// BindgateSchedulerName is bindgate with ungated pods that name it in
	// spec.schedulerName: no gate to remove, so the same API writes as
	// kube-scheduler (binding, event). It shows what the gate costs.
	BindgateSchedulerName = "bindgate-schedulername"
	KubeScheduler         = "kube-scheduler"
	RawBind               = "raw-bind"
)

type workload struct {
	Name  string
	Nodes int
	Pods  int
	// Rate > 0 makes a steady stream: pods are created at Rate per second
	// for Duration while the contender runs.
	Rate     int
	Duration time.Duration
	// Kind adds constraints to every pod (KindAntiAffinity, KindSpread).
	Kind string
}

type result struct {
	Contender  string
	Workload   string
	Rep        int
	PodsPerSec float64 // over the first-bind..last-bind window
	Total      time.Duration
	PeakRSSMiB float64
	// GangsOneRack is, for the gang workloads, the fraction of gangs
	// placed inside one rack.
	GangsOneRack float64
	// Gangs marks a gang workload's result.
	Gangs        bool
	WritesPerPod float64
	Writes       map[string]float64 // by resource/verb
	// EtcdPodReadsPerPod counts the API server's reads of single pods
	// from etcd per bound pod: a write whose watch-cache copy of the pod
	// was stale is retried after one.
	EtcdPodReadsPerPod float64
	// EtcdPerPod is etcd's own count of the work it did, per bound pod
	// (etcdWork), from before the contender started to the last bind.
	EtcdPerPod map[string]float64
	// WriteLatency is the API server's mean time per write, by resource/verb.
	WriteLatency map[string]float64
	P50, P99     time.Duration
	Curve        []point // bound pods over time since the contender started
	Err          string
	// Check is the placement check's verdict ("ok" or the first breach).
	Check  string
	Phases string // bindgate's mean time per extension point
	// CPU is each process's CPU milliseconds per bound pod (kube-apiserver,
	// etcd, the contender when it is a process of its own).
	CPU map[string]float64
	// WindowCPU is the same over the first-bind..last-bind window only,
	// the window pods/s is measured over: without the contender's start
	// (its informers' lists, cache sync), which CPU counts.
	WindowCPU map[string]float64
	// WindowActivity is, over the same window, each process's read and
	// write system calls and context switches per bound pod (activity).
	WindowActivity map[string]float64
	// APIServerByKind splits kube-apiserver's CPU milliseconds per bound
	// pod by request kind, in the shares a 5 s CPU profile of it found
	// (first repetition only).
	APIServerByKind map[string]float64
	// Timeline is kube-apiserver's count of completed bindings beside the
	// watch's count of bound pods, over time (-timeline).
	Timeline []timelineSample
}

// timelineSample is one reading of -timeline.
type timelineSample struct {
	T      time.Duration // since the contender started
	Server int           // pods/binding requests kube-apiserver completed
	Seen   int           // pods the bench's watch has seen bound
}

// formatTimeline writes samples as "seconds:server/seen".
func formatTimeline(samples []timelineSample) string {
	out := make([]string, len(samples))
	for i, s := range samples {
		out[i] = fmt.Sprintf("%.1fs:%d/%d", s.T.Seconds(), s.Server, s.Seen)
	}
	return strings.Join(out, " ")
}

// steadyRate is the binding rate on the API server's count between the
// samples' 10% and 90% of want (each moment interpolated between the
// samples around it): the rate in the middle of a run, without the
// contender's first and last moments. Zero when the samples do not span it.
func steadyRate(samples []timelineSample, want int) float64 {
	at := func(n float64) (time.Duration, bool) {
		for i := 1; i < len(samples); i++ {
			a, b := samples[i-1], samples[i]
			if float64(a.Server) < n && n <= float64(b.Server) {
				f := (n - float64(a.Server)) / float64(b.Server-a.Server)
				return a.T + time.Duration(f*float64(b.T-a.T)), true
			}
		}
		return 0, false
	}
	lo, hi := 0.1*float64(want), 0.9*float64(want)
	t0, ok0 := at(lo)
	t1, ok1 := at(hi)
	if !ok0 || !ok1 || t1 <= t0 {
		return 0
	}
	return (hi - lo) / (t1 - t0).Seconds()
}

// recordTimeline reads kube-apiserver's count of completed bindings (less
// base, the count before the contender started) every interval until want
// pods are seen bound or ctx ends; the samples are sent on done.
func recordTimeline(ctx context.Context, cp *controlPlane, tr *tracker, start time.Time, base float64, want int, interval time.Duration, done chan<- []timelineSample) {
	var samples []timelineSample
	defer func() { done <- samples }()
	for ctx.Err() == nil {
		seen := int(tr.count.Load())
		raw, err := cp.apiMetrics(ctx)
		if err == nil {
			samples = append(samples, timelineSample{T: time.Since(start), Server: int(completedBindings(raw) - base), Seen: seen})
		}
		if seen >= want {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
}

type point struct {
	T     float64
	Bound int
}

func main() {
	var (
		reps      = flag.Int("reps", 3, "Repetitions per contender and workload (medians are reported).")
		only      = flag.String("workloads", "500x3000,5000x10000,antiaffinity,spread", "Comma-separated workloads; the default is the four that docs/benchmarks.md's generated section reports: 500x3000, 5000x10000, antiaffinity (500 nodes / 1000 anti-affine pods, after scheduler_perf), spread (1000 nodes in 3 zones / 5000 spread pods, after scheduler_perf). Also: stream (200 pods/s), stream100 (100 pods/s), gangs and gangs-rack (bindgate's label gangs, bindgate only), podgroups and podgroups-rack (the same gangs as upstream PodGroups, against kube-scheduler's GangScheduling with the Workload API's feature gates on), podgroups-stream and podgroups-rack-stream (100 such PodGroups whose members are created one by one at 100 pods/s).")
		out       = flag.String("out", "docs/benchmarks.md", "Markdown report to write.")
		plotOut   = flag.String("plot", "", "PNG plot of bound pods over time (500x3000); default: the -out path with .png (docs/benchmarks.png).")
		bindgate  = flag.String("bindgate", "bin/bindgate", "bindgate binary. Before each run the bench drops the named file from the page cache (peak RSS counts its mapped pages); a wrapper script given here should drop the binary it runs itself (e.g. dd if=BINARY iflag=nocache count=0).")
		scheduler = flag.String("kube-scheduler", "bin/kube-scheduler", "kube-scheduler binary.")
		workers   = flag.Int("workers", 16, "bindgate --workers.")
		only2     = flag.String("contenders", "bindgate,ungate+kube-scheduler,bindgate-schedulername,kube-scheduler,raw-bind", "Comma-separated contenders to run, in this order (reversed every other repetition); each next to its baseline, so that a pair's ratio is taken at one state of the machine.")
		heap      = flag.String("heap", "", "Write a heap profile of bindgate's first run, taken once every pod is bound, to this file.")
		pprof     = flag.String("pprof", "", "Write a CPU profile of bindgate's first run, from just after its first bind (see -pprof-delay, -pprof-seconds), to this file.")
		pprofSecs = flag.Int("pprof-seconds", 3, "Length of the -pprof profile, in seconds: a run that ends sooner (the anti-affinity workload lasts about 2 s) leaves no profile.")
		pprofWait = flag.Duration("pprof-delay", 500*time.Millisecond, "How long after bindgate's first bind the -pprof profile starts.")
		apiProf   = flag.Bool("apiserver-profile", true, "Profile kube-apiserver for 5s in each contender's first repetition of a batch workload and split its CPU per bound pod by request kind.")
		profDir   = flag.String("profile-dir", "", "Also keep those kube-apiserver profiles in this directory.")
		timeline  = flag.Duration("timeline", 0, "Every this often (e.g. 250ms), read kube-apiserver's count of completed pods/binding requests and log it beside the pods the bench's watch has seen bound: the API server's own timeline of the binds, to tell a lagging watch from a slow contender. Off by default: each read of /metrics costs the API server CPU.")
		warmup    = flag.Bool("warmup", true, "Before measuring, run the first workload's first contender once and discard the result: here the first run of a bench process was often the slowest of its process, for every process of the machine (contender, etcd and kube-apiserver alike) and whichever contender it was, which biased the pair it fell in against that contender.")
		pool      = flag.Bool("pool", false, "Run nothing: read the bench logs named as arguments (this program's standard output, e.g. go run ./test/bench ... | tee LOG) and print, per workload, each pair of a contender and its baseline pooled over every repetition of every log: the ratios, their median, the sign test's 95% interval for it, how many were above and below 1.0, and the peak RSS of both sides.")
		running   = flag.Bool("allow-running", false, "Run even when a kube-apiserver, etcd, kube-scheduler or bindgate process is already running on this machine (by default the bench refuses: it would share the CPU with every contender).")
	)
	flag.Parse()
	if *pool {
		os.Exit(poolMain(flag.Args(), os.Stdout, os.Stderr))
	}
	if strays := strayProcesses("/proc", benchProcesses); len(strays) > 0 && !*running {
		fmt.Fprintf(os.Stderr, "refusing to start: these processes would share the machine with every contender (an interrupted bench leaves its control plane running):\n  %s\nstop them, or pass -allow-running\n", strings.Join(strays, "\n  "))
		os.Exit(2)
	}
	ctrllog.SetLogger(logr.Discard())
	all := map[string]workload{
		"500x3000":       {Name: "500 nodes / 3000 pods", Nodes: 500, Pods: 3000},
		"5000x10000":     {Name: "5000 nodes / 10000 pods", Nodes: 5000, Pods: 10000},
		"stream":         {Name: "stream 200 pods/s for 30s on 500 nodes", Nodes: 500, Rate: 200, Duration: 30 * time.Second},
		"stream100":      {Name: "stream 100 pods/s for 30s on 500 nodes", Nodes: 500, Rate: 100, Duration: 30 * time.Second},
		"antiaffinity":   {Name: "pod anti-affinity: 500 nodes / 1000 pods in 4 anti-affine groups", Nodes: 500, Pods: 1000, Kind: KindAntiAffinity},
		"spread":         {Name: "topology spread: 1000 nodes in 3 zones / 5000 pods", Nodes: 1000, Pods: 5000, Kind: KindSpread},
		"gangs":          {Name: "gangs: 64 gangs of 8 (16 CPU each) on 512 nodes in 32 racks, no topology", Nodes: 512, Pods: 512, Kind: KindGang},
		"gangs-rack":     {Name: "gangs: 64 gangs of 8 (16 CPU each) on 512 nodes in 32 racks, each Required in one rack", Nodes: 512, Pods: 512, Kind: KindGangRack},
		"podgroups":      {Name: "PodGroups: 64 PodGroups of 8 (16 CPU each) on 512 nodes in 32 racks, no topology", Nodes: 512, Pods: 512, Kind: KindPodGroup},
		"podgroups-rack": {Name: "PodGroups: 64 PodGroups of 8 (16 CPU each) on 512 nodes in 32 racks, each constrained to one rack", Nodes: 512, Pods: 512, Kind: KindPodGroupRack},
		// Members arriving one by one: a gang is incomplete until its
		// eighth member exists (bindgate tells the waiting members why;
		// kube-scheduler holds them in PreEnqueue). Latency is the measure.
		"podgroups-stream":      {Name: "PodGroups arriving: 100 PodGroups of 8 (16 CPU each), members created one by one at 100 pods/s, on 512 nodes in 32 racks, no topology", Nodes: 512, Pods: 800, Rate: 100, Duration: 8 * time.Second, Kind: KindPodGroup},
		"podgroups-rack-stream": {Name: "PodGroups arriving: 100 PodGroups of 8 (16 CPU each), members created one by one at 100 pods/s, on 512 nodes in 32 racks, each constrained to one rack", Nodes: 512, Pods: 800, Rate: 100, Duration: 8 * time.Second, Kind: KindPodGroupRack},
	}
	var results []result
	var order []string
	warmed := !*warmup
	var warm *result // the warm-up run, when one ran
	for _, key := range strings.Split(*only, ",") {
		w, ok := all[key]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown workload %q\n", key)
			os.Exit(2)
		}
		order = append(order, w.Name)
		var contenders []string
		for _, c := range strings.Split(*only2, ",") {
			if !slices.Contains([]string{Bindgate, BindgateSchedulerName, KubeScheduler, UngateKubeScheduler, RawBind}, c) {
				fmt.Fprintf(os.Stderr, "unknown contender %q (want bindgate, bindgate-schedulername, kube-scheduler, ungate+kube-scheduler or raw-bind)\n", c)
				os.Exit(2)
			}
			if isLabelGang(w.Kind) && c != Bindgate && c != BindgateSchedulerName {
				continue
			}
			if c != RawBind || (w.Rate == 0 && w.Kind == KindPlain) {
				contenders = append(contenders, c)
			}
		}
		if !warmed && len(contenders) > 0 {
			warmed = true
			fmt.Printf(">> warm-up (not reported): %s, %s\n", w.Name, contenders[0])
			r := run(w, contenders[0], 0, runConfig{bindgate: *bindgate, scheduler: *scheduler, workers: *workers})
			warm = &r
			fmt.Printf("   warm-up: %.0f pods/s, placement check: %s\n", r.PodsPerSec, r.Check)
			if r.Err != "" {
				fmt.Printf("   warm-up error: %s\n", r.Err)
			}
		}
		for rep := 1; rep <= *reps; rep++ {
			// Alternate the order so drift on a noisy machine spreads evenly.
			cs := slices.Clone(contenders)
			if rep%2 == 0 {
				slices.Reverse(cs)
			}
			for _, c := range cs {
				fmt.Printf(">> %s, %s, repetition %d/%d\n", w.Name, c, rep, *reps)
				r := run(w, c, rep, runConfig{bindgate: *bindgate, scheduler: *scheduler, workers: *workers, pprof: *pprof, pprofSeconds: *pprofSecs, pprofDelay: *pprofWait, heap: *heap,
					apiProfile: *apiProf && rep == 1 && w.Rate == 0, profileDir: *profDir, timeline: *timeline})
				*pprof, *heap = "", ""
				if r.Phases != "" {
					fmt.Printf("   phases: %s\n", r.Phases)
				}
				var lat []string
				for k, v := range r.WriteLatency {
					if r.Writes[k] >= 0.5 {
						lat = append(lat, fmt.Sprintf("%s %.1fms", k, 1000*v))
					}
				}
				sort.Strings(lat)
				fmt.Printf("   API server time per write: %s\n", strings.Join(lat, ", "))
				fmt.Printf("   CPU ms per bound pod: %s\n", formatMap(r.CPU, "%.2f"))
				fmt.Printf("   CPU ms per bound pod, first bind to last: %s\n", formatMap(r.WindowCPU, "%.2f"))
				if len(r.WindowActivity) > 0 {
					fmt.Printf("   system calls and context switches per bound pod, first bind to last: %s\n", formatMap(r.WindowActivity, "%.1f"))
				}
				fmt.Printf("   etcd reads of a pod per bound pod: %.3f\n", r.EtcdPodReadsPerPod)
				fmt.Printf("   etcd's work per bound pod: %s\n", formatMap(r.EtcdPerPod, "%.2f"))
				if len(r.Timeline) > 0 {
					fmt.Printf("   bindings completed by kube-apiserver / seen bound by the bench's watch: %s\n", formatTimeline(r.Timeline))
					if w.Rate == 0 { // a batch workload
						if rate := steadyRate(r.Timeline, w.Pods); rate > 0 {
							fmt.Printf("   steady rate on kube-apiserver's count, 10%% to 90%% of the bindings: %.0f pods/s\n", rate)
						}
					}
				}
				if len(r.APIServerByKind) > 0 {
					fmt.Printf("   kube-apiserver CPU ms per bound pod by request: %s\n", formatMap(r.APIServerByKind, "%.2f"))
				}
				fmt.Printf("   placement check: %s\n", r.Check)
				if isGang(w.Kind) {
					fmt.Printf("   gangs: %.1f gangs/s, %.0f%% within one rack\n", r.PodsPerSec/gangSize, 100*r.GangsOneRack)
				}
				if r.Err != "" {
					fmt.Printf("   error: %s\n", r.Err)
				} else {
					fmt.Printf("   %.0f pods/s, total %v, peak RSS %.0f MiB, %.2f writes/pod, p50 %v, p99 %v\n",
						r.PodsPerSec, r.Total.Round(time.Millisecond), r.PeakRSSMiB, r.WritesPerPod, r.P50, r.P99)
				}
				results = append(results, r)
			}
		}
	}
	plot := cmp.Or(*plotOut, strings.TrimSuffix(*out, filepath.Ext(*out))+".png")
	report := render(order, results, warm, os.Args[1:], plotRef(*out, plot))
	if err := writeReport(*out, report); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := plotCurves(plot, results); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
	}
	fmt.Println(report)
}

// plotRef is how the report at out links to the plot: relative to the
// report's directory (an -out elsewhere no longer links to, nor overwrites,
// docs/benchmarks.png), else the plot's absolute path.
func plotRef(out, plot string) string {
	if rel, err := filepath.Rel(filepath.Dir(out), plot); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	if abs, err := filepath.Abs(plot); err == nil {
		return abs
	}
	return plot
}

type runConfig struct {
	bindgate, scheduler string
	workers             int
	pprof               string
	pprofSeconds        int
	pprofDelay          time.Duration
	heap                string
	apiProfile          bool
	profileDir          string
	timeline            time.Duration
}

type controlPlane struct {
	env *envtest.Environment
	cfg *rest.Config
	cs  kubernetes.Interface
	// fast speaks protobuf, as kube-scheduler and bindgate do: the bench's
	// own pod creations and watch cost the API server as little as they can.
	fast kubernetes.Interface
	// ungater is the ungating controller's client (protobuf too): a
	// controller of its own, with its own user agent and so its own field
	// manager in each pod's managedFields, as Kueue's is next to the
	// controller that created the pod. Sharing the bench's client, its
	// update merged into the creator's managedFields entry, which no real
	// ungating controller does (and which made each later write of the pod
	// cheaper for the API server and etcd than bindgate's).
	ungater    kubernetes.Interface
	cl         client.Client
	kubeconfig string
	dir        string
}

func startControlPlane(kind string) (*controlPlane, error) {
	env := &envtest.Environment{
		BinaryAssetsDirectory: testenv.AssetsDir(),
		CRDDirectoryPaths:     []string{filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	api := env.ControlPlane.GetAPIServer()
	// Nodes are created Ready: no node.kubernetes.io/not-ready taint.
	api.Configure().Append("disable-admission-plugins", "TaintNodesByCondition")
	api.Configure().Set("max-requests-inflight", "2000")
	api.Configure().Set("max-mutating-requests-inflight", "1000")
	if isPodGroup(kind) {
		// The Workload API (PodGroups); without TopologyAwareWorkloadScheduling
		// the API server drops a PodGroup's schedulingConstraints.
		api.Configure().Append("feature-gates", podGroupFeatures)
		api.Configure().Append("runtime-config", "scheduling.k8s.io/v1beta1=true")
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	cp := &controlPlane{env: env, cfg: cfg}
	if cp.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	fastCfg := rest.CopyConfig(cfg)
	fastCfg.ContentType = "application/vnd.kubernetes.protobuf"
	fastCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	if cp.fast, err = kubernetes.NewForConfig(fastCfg); err != nil {
		return nil, err
	}
	ungaterCfg := rest.CopyConfig(fastCfg)
	ungaterCfg.UserAgent = "ungate-controller"
	if cp.ungater, err = kubernetes.NewForConfig(ungaterCfg); err != nil {
		return nil, err
	}
	if cp.cl, err = client.New(cfg, client.Options{Scheme: testenv.Scheme()}); err != nil {
		return nil, err
	}
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "bench", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	if cp.dir, err = os.MkdirTemp("", "bindgate-bench-"); err != nil {
		return nil, err
	}
	cp.kubeconfig = filepath.Join(cp.dir, "kubeconfig")
	return cp, os.WriteFile(cp.kubeconfig, kc, 0o600)
}

func (cp *controlPlane) stop() {
	_ = cp.env.Stop()
	_ = os.RemoveAll(cp.dir)
}

// parallel runs f(i) for i in [0,n) on k workers.
func parallel(n, k int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var first atomic.Value
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := first.Load().(error); ok {
		return err
	}
	return nil
}

func createNodes(ctx context.Context, cs kubernetes.Interface, n int) error {
	return parallel(n, 32, func(i int) error {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%05d", i), Labels: map[string]string{
				corev1.LabelHostname: fmt.Sprintf("node-%05d", i), "pool": "bench", corev1.LabelTopologyZone: zoneOf(i), rackLabel: rackOf(i),
			}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi"), corev1.ResourcePods: resource.MustParse("110")},
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi"), corev1.ResourcePods: resource.MustParse("110")},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
				Phase:       corev1.NodeRunning,
			},
		}
		_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		return err
	})
}

// benchPod is pod i as contender expects it: gated for bindgate, naming
// bindgate as its scheduler for bindgate-schedulername, plain otherwise.
func benchPod(i int, contender, kind string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("pod-%06d", i)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
			}}}}},
	}
	switch contender {
	case Bindgate:
		p.Labels = map[string]string{bindgatev1alpha1.PolicyLabel: "bench"}
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}}
	case BindgateSchedulerName:
		p.Labels = map[string]string{bindgatev1alpha1.PolicyLabel: "bench"}
		p.Spec.SchedulerName = bindgatev1alpha1.SchedulerName
	case UngateKubeScheduler:
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: foreignGate}}
	}
	shape(p, i, kind)
	return p
}

// probeNamespace holds the pod waitSchedulerReady has kube-scheduler bind:
// outside "bench", so the tracker, the placement check and the workloads'
// namespaced selectors do not see it.
const probeNamespace = "bench-probe"

// waitSchedulerReady creates an ungated pod in probeNamespace and waits
// until kube-scheduler binds it: then its informers are synced and it
// schedules.
func waitSchedulerReady(ctx context.Context, cs kubernetes.Interface) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNamespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the probe namespace: %w", err)
	}
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: probeNamespace, Name: "probe"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if _, err := cs.CoreV1().Pods(probeNamespace).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the probe pod: %w", err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := cs.CoreV1().Pods(probeNamespace).Get(ctx, "probe", metav1.GetOptions{})
		if err == nil && p.Spec.NodeName != "" {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("kube-scheduler did not bind the probe pod in 2 minutes: %w", err)
			}
			return errors.New("kube-scheduler did not bind the probe pod in 2 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tracker records when each pod is first seen bound.
type tracker struct {
	mu      sync.Mutex
	start   time.Time
	created map[string]time.Time
	bound   map[string]time.Time
	count   atomic.Int64
	// firstBound is closed when the first pod is seen bound.
	firstBound chan struct{}
}

// waitFirstBound blocks until the first pod is seen bound and says whether
// it was (false: ctx ended first).
func (t *tracker) waitFirstBound(ctx context.Context) bool {
	select {
	case <-t.firstBound:
		return true
	case <-ctx.Done():
		return false
	}
}

func newTracker(ctx context.Context, cs kubernetes.Interface) *tracker {
	t := &tracker{created: map[string]time.Time{}, bound: map[string]time.Time{}, firstBound: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("bench"))
	inf := f.Core().V1().Pods().Informer()
	onPod := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		now := time.Now()
		t.mu.Lock()
		if _, seen := t.bound[p.Name]; !seen {
			t.bound[p.Name] = now
			if t.count.Add(1) == 1 {
				close(t.firstBound)
			}
		}
		t.mu.Unlock()
	}
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: onPod, UpdateFunc: func(_, o any) { onPod(o) }})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return t
}

func run(w workload, contender string, rep int, rc runConfig) (res result) {
	res = result{Contender: contender, Workload: w.Name, Rep: rep}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp, err := startControlPlane(w.Kind)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer cp.stop()
	fail := func(err error) result { res.Err = err.Error(); return res }

	if _, err := cp.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		return fail(err)
	}
	isBindgate := contender == Bindgate || contender == BindgateSchedulerName
	if isBindgate {
		pol := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bench"},
			Spec: bindgatev1alpha1.BindingPolicySpec{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "bench"}}}}
		if isLabelGang(w.Kind) {
			pol.Spec.Permit = gangPermit(w.Kind) // a PodGroup is a gang by itself
		}
		if err := cp.cl.Create(ctx, pol); err != nil {
			return fail(err)
		}
	}
	if err := createNodes(ctx, cp.fast, w.Nodes); err != nil {
		return fail(fmt.Errorf("creating nodes: %w", err))
	}
	if isPodGroup(w.Kind) {
		if err := createPodGroups(ctx, cp.fast, w.Pods, w.Kind); err != nil {
			return fail(fmt.Errorf("creating PodGroups: %w", err))
		}
	}
	if w.Rate == 0 {
		if err := parallel(w.Pods, 32, func(i int) error {
			_, err := cp.fast.CoreV1().Pods("bench").Create(ctx, benchPod(i, contender, w.Kind), metav1.CreateOptions{})
			return err
		}); err != nil {
			return fail(fmt.Errorf("creating pods: %w", err))
		}
	}
	tr := newTracker(ctx, cp.fast)
	apiBefore, err := cp.apiMetrics(ctx)
	if err != nil {
		return fail(err)
	}
	before := writeCounts(apiBefore)
	cpuBefore := cp.cpu(ctx, apiBefore, contender, 0)
	cpuBefore[contender] = 0
	etcdBefore := cp.etcdWork(ctx)

	var proc *exec.Cmd
	var lifted atomic.Int64
	start := time.Now()
	tr.start = start
	switch contender {
	case Bindgate, BindgateSchedulerName:
		proc = exec.CommandContext(ctx, rc.bindgate, "--kubeconfig", cp.kubeconfig, "--leader-elect=false",
			// One replica: only waiting pods' reservations need recording
			// (auto would record every one, as for several replicas).
			"--durable-reservations=waiting",
			"--operator-namespace=default", // holds the seal key Secret
			"--metrics-bind-address=127.0.0.1:18080", "--metrics-secure=false", "--health-probe-bind-address=0", "--workers", strconv.Itoa(rc.workers), "--zap-log-level=error")
		if rc.pprof != "" || rc.heap != "" {
			proc.Args = append(proc.Args, "--pprof-bind-address=127.0.0.1:6061")
		}
		if rc.pprof != "" {
			go func() {
				// The steady state: from just after the first bind (at 5000
				// nodes the first seconds are the caches' initial lists).
				if !tr.waitFirstBound(ctx) {
					return
				}
				time.Sleep(rc.pprofDelay)
				url := fmt.Sprintf("http://127.0.0.1:6061/debug/pprof/profile?seconds=%d", rc.pprofSeconds)
				out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-proto", "-output", rc.pprof, url).CombinedOutput()
				if err != nil {
					fmt.Fprintf(os.Stderr, "pprof: %v\n%s", err, out)
				}
			}()
		}
	case KubeScheduler, UngateKubeScheduler:
		cfgPath := filepath.Join(cp.dir, "scheduler.yaml")
		cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 5000
  burst: 5000
leaderElection:
  leaderElect: false
`, cp.kubeconfig)
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			return fail(err)
		}
		proc = exec.CommandContext(ctx, rc.scheduler, "--config", cfgPath, "--secure-port=0", "-v=0")
		if isPodGroup(w.Kind) {
			// GangScheduling and the TopologyAware plugins join the default
			// profile with these gates.
			proc.Args = append(proc.Args, "--feature-gates="+podGroupFeatures)
		}
	case RawBind:
		go rawBind(ctx, cp.fast, w)
	}
	if proc != nil {
		logf, _ := os.Create(filepath.Join(cp.dir, contender+".log"))
		proc.Stdout, proc.Stderr = logf, logf
		// Every contender maps its binary from the same page-cache state
		// (evictPageCache): peak RSS counts the binary's mapped pages.
		if err := evictPageCache(proc.Path); err != nil {
			fmt.Fprintf(os.Stderr, "   peak RSS may count the binary's cached pages unevenly: %v\n", err)
		}
		if err := proc.Start(); err != nil {
			return fail(err)
		}
		defer func() { _ = proc.Process.Kill(); _ = proc.Wait() }()
	}
	if contender == UngateKubeScheduler {
		// The ungating controller starts once kube-scheduler binds: both
		// run before the workload arrives, as in a cluster, and no gate is
		// lifted outside the first-bind..last-bind window while
		// kube-scheduler starts (a few hundred at 500 nodes otherwise).
		if err := waitSchedulerReady(ctx, cp.fast); err != nil {
			return fail(err)
		}
		go ungate(ctx, cp.ungater, &lifted)
		go func() {
			if tr.waitFirstBound(ctx) {
				fmt.Printf("   gates lifted before the first bind: %d\n", lifted.Load())
			}
		}()
	}
	// The CPU used so far at the first bind, to measure it over the same
	// window as pods/s.
	type firstBind struct {
		cpu      cpuSnapshot
		activity map[string]float64
		bound    int // pods bound when cpu was read
	}
	atFirstBind := make(chan firstBind, 1)
	go func() {
		_ = tr.waitFirstBound(ctx) // at ctx's end the snapshot is empty, and unread
		pid := 0
		if proc != nil {
			pid = proc.Process.Pid
		}
		var s cpuSnapshot
		if m, err := cp.apiMetrics(ctx); err == nil {
			s = cp.cpu(ctx, m, contender, pid)
		}
		act := activity("/proc", controlPlanePIDs("/proc", contender, pid))
		atFirstBind <- firstBind{cpu: s, activity: act, bound: int(tr.count.Load())}
	}()
	profiled := make(chan map[string]float64, 1)
	if rc.apiProfile {
		go func() {
			if !tr.waitFirstBound(ctx) {
				profiled <- nil
				return
			}
			time.Sleep(500 * time.Millisecond)
			byKind, err := apiserverProfile(ctx, cp.cs, 5*time.Second, rc.profileDir, "apiserver-"+contender+"-"+strings.NewReplacer(" ", "", "/", "-").Replace(w.Name))
			if err != nil {
				fmt.Fprintln(os.Stderr, "   kube-apiserver profile:", err)
			}
			profiled <- byKind
		}()
	} else {
		profiled <- nil
	}

	want := w.Pods
	if w.Rate > 0 {
		time.Sleep(3 * time.Second) // let the contender sync its caches
		want = w.Rate * int(w.Duration/time.Second)
		go stream(ctx, cp.fast, tr, w, contender)
	}
	var timeline chan []timelineSample
	if rc.timeline > 0 {
		timeline = make(chan []timelineSample, 1)
		go recordTimeline(ctx, cp, tr, start, before["POST pods/binding"], want, rc.timeline, timeline)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for tr.count.Load() < int64(want) {
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("only %d/%d pods bound after 10 minutes", tr.count.Load(), want))
		}
		res.Curve = append(res.Curve, point{T: time.Since(start).Seconds(), Bound: int(tr.count.Load())})
		time.Sleep(100 * time.Millisecond)
	}
	res.Total = time.Since(start)
	res.Curve = append(res.Curve, point{T: res.Total.Seconds(), Bound: int(tr.count.Load())})
	if timeline != nil {
		res.Timeline = <-timeline
	}
	res.Gangs = isGang(w.Kind)
	if res.Check, res.GangsOneRack = checkPlacementGangs(ctx, cp.cs, w.Kind); res.Check != "" {
		res.Err = "placement check: " + res.Check
	} else {
		res.Check = "ok"
	}
	pid := 0
	if proc != nil {
		pid = proc.Process.Pid
	}
	apiAfter, err := cp.apiMetrics(ctx)
	if err != nil {
		return fail(err)
	}
	after := writeCounts(apiAfter)
	res.EtcdPodReadsPerPod = (etcdPodReads(apiAfter) - etcdPodReads(apiBefore)) / float64(want)
	res.EtcdPerPod = perPodCounts(etcdBefore, cp.etcdWork(ctx), want)
	cpuAfter := cp.cpu(ctx, apiAfter, contender, pid)
	actAfter := activity("/proc", controlPlanePIDs("/proc", contender, pid))
	res.CPU = perPod(cpuBefore, cpuAfter, want)
	fb := <-atFirstBind
	res.WindowCPU = perPod(fb.cpu, cpuAfter, want-fb.bound)
	res.WindowActivity = perPodCounts(fb.activity, actAfter, want-fb.bound)
	if proc != nil {
		res.PeakRSSMiB = peakRSS(proc.Process.Pid)
	}
	if isBindgate && rc.heap != "" {
		// The heap once every pod is bound: what the operator keeps.
		out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-proto", "-output", rc.heap, "http://127.0.0.1:6061/debug/pprof/heap").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "heap profile: %v\n%s", err, out)
		}
	}
	if isBindgate {
		res.Phases = phaseMeans(ctx)
	}
	res.Writes = map[string]float64{}
	res.WriteLatency = map[string]float64{}
	var total float64
	for k, v := range after {
		if strings.HasPrefix(k, "seconds ") {
			continue
		}
		if n := v - before[k]; n > 0 {
			res.WriteLatency[k] = (after["seconds "+k] - before["seconds "+k]) / n
		}
		d := v - before[k]
		if strings.HasPrefix(k, "POST pods") && !strings.Contains(k, "/binding") && w.Rate > 0 {
			d -= float64(want) // the stream's own pod creations
		}
		if d > 0 {
			res.Writes[k] = d / float64(want)
			total += d
		}
	}
	res.WritesPerPod = total / float64(want)

	// The profile gives shares (taken after the first bind); the API
	// server's CPU per pod over the first-bind..last-bind window gives the
	// scale.
	if shares := <-profiled; len(shares) > 0 {
		res.APIServerByKind = map[string]float64{}
		for k, v := range shares {
			res.APIServerByKind[k] = v * res.WindowCPU["kube-apiserver"]
		}
	}

	tr.mu.Lock()
	var first, last time.Time
	var lat []time.Duration
	for name, t := range tr.bound {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
		if c, ok := tr.created[name]; ok {
			lat = append(lat, t.Sub(c))
		}
	}
	tr.mu.Unlock()
	if w.Rate > 0 {
		res.PodsPerSec = float64(want) / last.Sub(start).Seconds()
	} else if window := last.Sub(first).Seconds(); window > 0 {
		res.PodsPerSec = float64(want) / window
	}
	if len(lat) > 0 {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		res.P50 = lat[len(lat)/2].Round(time.Millisecond)
		res.P99 = lat[len(lat)*99/100].Round(time.Millisecond)
	}
	return res
}

// rawBind is the write ceiling: 32 workers POST pods/binding round-robin.
func rawBind(ctx context.Context, cs kubernetes.Interface, w workload) {
	_ = parallel(w.Pods, 32, func(i int) error {
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("pod-%06d", i)},
			Target: corev1.ObjectReference{Kind: "Node", Name: fmt.Sprintf("node-%05d", i%w.Nodes)}}
		if err := cs.CoreV1().Pods("bench").Bind(ctx, b, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "raw bind:", err)
		}
		return nil
	})
}

// stream creates pods at w.Rate per second for w.Duration.
func stream(ctx context.Context, cs kubernetes.Interface, tr *tracker, w workload, contender string) {
	total := w.Rate * int(w.Duration/time.Second)
	interval := time.Second / time.Duration(w.Rate)
	next := time.Now()
	sem := make(chan struct{}, 16)
	for i := range total {
		time.Sleep(time.Until(next))
		next = next.Add(interval)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			p := benchPod(i, contender, w.Kind)
			now := time.Now()
			tr.mu.Lock()
			tr.created[p.Name] = now
			tr.mu.Unlock()
			_, _ = cs.CoreV1().Pods("bench").Create(ctx, p, metav1.CreateOptions{})
		}()
	}
}

// apiMetrics scrapes kube-apiserver's /metrics page.
func (cp *controlPlane) apiMetrics(ctx context.Context) ([]byte, error) {
	raw, err := cp.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping kube-apiserver /metrics: %w", err)
	}
	return raw, nil
}

// eachSample calls fn with the metric name, labels (none: an empty map)
// and value of every sample on a /metrics page whose metric is one of names.
func eachSample(raw []byte, names []string, fn func(name string, labels map[string]string, v float64)) {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, name := range names {
			rest, ok := strings.CutPrefix(line, name)
			if !ok || rest == "" || rest[0] != '{' && rest[0] != ' ' {
				continue
			}
			fields := strings.Fields(line)
			v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
			if err != nil {
				break
			}
			labels := map[string]string{}
			if rest[0] == '{' {
				labels = parseLabels(rest[1:strings.LastIndex(rest, "}")])
			}
			fn(name, labels, v)
			break
		}
	}
}

// writeCounts reads apiserver_request_total (and the matching
// apiserver_request_duration_seconds_sum, keyed "seconds ...") for mutating
// verbs from a /metrics page, keyed by "VERB resource[/subresource]".
func writeCounts(raw []byte) map[string]float64 {
	out := map[string]float64{}
	eachSample(raw, []string{"apiserver_request_total", "apiserver_request_duration_seconds_sum"}, func(name string, labels map[string]string, v float64) {
		verb := labels["verb"]
		if verb != "POST" && verb != "PUT" && verb != "PATCH" && verb != "DELETE" && verb != "APPLY" {
			return
		}
		key := verb + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		if name != "apiserver_request_total" {
			key = "seconds " + key
		}
		out[key] += v
	})
	return out
}

// completedBindings is the API server's count of pods/binding requests
// (apiserver_request_total, verb POST): writeCounts' "POST pods/binding"
// without the rest of its map, for -timeline's reads every interval.
func completedBindings(raw []byte) float64 {
	var n float64
	eachSample(raw, []string{"apiserver_request_total"}, func(_ string, labels map[string]string, v float64) {
		if labels["verb"] == "POST" && labels["resource"] == "pods" && labels["subresource"] == "binding" {
			n += v
		}
	})
	return n
}

// etcdPodReads is the API server's count of single-pod reads from etcd
// (etcd_request_duration_seconds_count, operation "get", resource "pods").
func etcdPodReads(raw []byte) float64 {
	var n float64
	eachSample(raw, []string{"etcd_request_duration_seconds_count"}, func(_ string, labels map[string]string, v float64) {
		if labels["operation"] == "get" && labels["resource"] == "pods" {
			n += v
		}
	})
	return n
}

func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// peakRSS reads VmHWM of a process, in MiB.
func peakRSS(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	v, ok := procField(data, "VmHWM")
	if !ok {
		return 0
	}
	kb, _ := strconv.ParseFloat(strings.TrimSuffix(v, " kB"), 64)
	return kb / 1024
}

// phaseMeans scrapes bindgate's metrics for the mean duration of each
// extension point and of the bind calls, with how many there were (more
// Filter runs than pods: cycles that ran again).
func phaseMeans(ctx context.Context) string {
	raw, err := testenv.Get(ctx, "http://127.0.0.1:18080/metrics")
	if err != nil {
		return ""
	}
	sums, counts := map[string]float64{}, map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, m := range []string{"bindgate_extension_point_duration_seconds", "bindgate_binding_duration_seconds", "bindgate_scheduling_duration_seconds"} {
			for suffix, into := range map[string]map[string]float64{"_sum": sums, "_count": counts} {
				if !strings.HasPrefix(line, m+suffix) {
					continue
				}
				key := strings.TrimPrefix(m, "bindgate_")
				if i := strings.Index(line, `extension_point="`); i >= 0 {
					key = line[i+len(`extension_point="`):]
					key = key[:strings.Index(key, `"`)]
				}
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				into[key] += v
			}
		}
	}
	var parts []string
	for k, c := range counts {
		if c > 0 {
			parts = append(parts, fmt.Sprintf("%s %.1fms ×%.0f", k, 1000*sums[k]/c, c))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// formatMap prints a map's entries sorted by key.
func formatMap(m map[string]float64, format string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+" "+fmt.Sprintf(format, m[k]))
	}
	return strings.Join(parts, ", ")
}

// Markers around the generated part of the report: text outside them (the
// analysis written by people) survives a new run.
const (
	beginMark = "<!-- bench:begin: generated by make bench; edit outside these markers -->"
	endMark   = "<!-- bench:end -->"
)

// writeReport replaces the generated part of path, or writes a new file.
func writeReport(path, report string) error {
	generated := beginMark + "\n" + report + endMark + "\n"
	if old, err := os.ReadFile(path); err == nil {
		text := string(old)
		i, j := strings.Index(text, beginMark), strings.Index(text, endMark)
		if i >= 0 && j > i {
			return os.WriteFile(path, []byte(text[:i]+generated+strings.TrimPrefix(text[j+len(endMark):], "\n")), 0o644)
		}
	}
	return os.WriteFile(path, []byte("# Benchmarks: bindgate vs kube-scheduler\n\n"+generated), 0o644)
}
