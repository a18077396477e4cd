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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/pprof/profile"

	"github.com/bindgate/bindgate/internal/testenv"
)

// TestWriteReport: a new run replaces only the generated part of the
// report; the analysis around it survives.
func TestWriteReport(t *testing.T) {
	cases := map[string]struct {
		existing string // "" = no file
		want     string
	}{
		"new file": {
			want: "# Benchmarks: bindgate vs kube-scheduler\n\n" + beginMark + "\nnew\n" + endMark + "\n",
		},
		"analysis around the markers is kept": {
			existing: "# Title\n\nintro\n\n" + beginMark + "\nold\nresults\n" + endMark + "\n\n## Analysis\n\ntext\n",
			want:     "# Title\n\nintro\n\n" + beginMark + "\nnew\n" + endMark + "\n\n## Analysis\n\ntext\n",
		},
		"end marker at end of file without newline": {
			existing: "intro\n" + beginMark + "\nold\n" + endMark,
			want:     "intro\n" + beginMark + "\nnew\n" + endMark + "\n",
		},
		"file without markers is replaced": {
			existing: "old report\n",
			want:     "# Benchmarks: bindgate vs kube-scheduler\n\n" + beginMark + "\nnew\n" + endMark + "\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "benchmarks.md")
			if tc.existing != "" {
				if err := os.WriteFile(path, []byte(tc.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := writeReport(path, "new\n"); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClassify: a CPU sample is named by the first request kind one of its
// frames matches, wherever in the stack the frame is.
func TestClassify(t *testing.T) {
	sample := func(funcs ...string) *profile.Sample {
		s := &profile.Sample{}
		for _, f := range funcs {
			s.Location = append(s.Location, &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: f}}}})
		}
		return s
	}
	cases := map[string]struct {
		sample *profile.Sample
		want   string
	}{
		"patch work in the finisher goroutine": {
			sample: sample("sigs.k8s.io/structured-merge-diff/v6/typed.handleAtom",
				"k8s.io/apiserver/pkg/storage/cacher.(*CacheDelegator).GuaranteedUpdate",
				"k8s.io/apiserver/pkg/endpoints/handlers.(*patcher).patchResource.func3",
				"k8s.io/apiserver/pkg/endpoints/handlers/finisher.finishRequest.func1"),
			want: "PATCH pods",
		},
		"update work in the finisher goroutine": {
			sample: sample("k8s.io/apimachinery/pkg/util/managedfields/internal.(*FieldManager).Update",
				"k8s.io/apiserver/pkg/storage/cacher.(*CacheDelegator).GuaranteedUpdate",
				"k8s.io/apiserver/pkg/endpoints/handlers.UpdateResource.func1.4",
				"k8s.io/apiserver/pkg/endpoints/handlers/finisher.finishRequest.func1"),
			want: "PUT pods",
		},
		"binding": {
			sample: sample("k8s.io/kubernetes/pkg/registry/core/pod/storage.(*BindingREST).Create",
				"k8s.io/apiserver/pkg/endpoints/handlers.CreateNamedResource.createHandler.func1.2"),
			want: "POST pods/binding",
		},
		"event creation": {
			sample: sample("k8s.io/apiserver/pkg/registry/generic/registry.(*Store).Create",
				"k8s.io/apiserver/pkg/endpoints/handlers.CreateResource.createHandler.func1.2"),
			want: "POST (events, pods)",
		},
		"client certificate check": {
			sample: sample("crypto/x509.(*Certificate).Verify",
				"k8s.io/apiserver/pkg/authentication/request/x509.(*Authenticator).AuthenticateRequest",
				"k8s.io/apiserver/pkg/endpoints/filters.withAuthentication.func1"),
			want: "authentication",
		},
		"watch dispatch": {
			sample: sample("k8s.io/apiserver/pkg/storage/cacher.(*cachingObject).CacheEncode",
				"k8s.io/apiserver/pkg/storage/cacher.(*cacheWatcher).processInterval"),
			want: "watch",
		},
		"nothing known": {
			sample: sample("golang.org/x/net/http2.(*serverConn).serve"),
			want:   KindOther,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := classify(tc.sample); got != tc.want {
				t.Errorf("classify = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCPUReaders: process CPU comes from /proc and from a metrics page;
// a page without the metric is an error, not a zero.
func TestCPUReaders(t *testing.T) {
	got, err := testenv.ProcessCPU([]byte("# HELP x\nprocess_cpu_seconds_total 12.5\nother 1\n"))
	if err != nil || got != 12500*time.Millisecond {
		t.Errorf("ProcessCPU = %v, %v; want 12.5s", got, err)
	}
	if _, err := testenv.ProcessCPU([]byte("other 1\n")); err == nil {
		t.Error("ProcessCPU of a page without process_cpu_seconds_total: want an error")
	}
	// Burn a little CPU so this process has some to report.
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	if d, err := procCPU(os.Getpid()); err != nil || d <= 0 {
		t.Errorf("procCPU(self) = %v, %v; want > 0", d, err)
	}
	if diff := cmp.Diff(map[string]float64{"etcd": 1.5}, perPod(cpuSnapshot{"etcd": time.Second}, cpuSnapshot{"etcd": 4 * time.Second, "new": time.Second}, 2000)); diff != "" {
		t.Errorf("perPod (-want +got):\n%s", diff)
	}
}

func TestEtcdPodReads(t *testing.T) {
	page := `# HELP etcd_request_duration_seconds ...
etcd_request_duration_seconds_count{group="",operation="get",resource="pods"} 27
etcd_request_duration_seconds_count{group="",operation="update",resource="pods"} 3000
etcd_request_duration_seconds_count{group="",operation="get",resource="nodes"} 5
etcd_request_duration_seconds_sum{group="",operation="get",resource="pods"} 0.5
`
	if got := etcdPodReads([]byte(page)); got != 27 {
		t.Errorf("etcdPodReads = %v, want 27", got)
	}
}

func TestWriteCounts(t *testing.T) {
	page := `apiserver_request_total{code="201",resource="pods",subresource="binding",verb="POST"} 3000
apiserver_request_total{code="409",resource="pods",subresource="",verb="PUT"} 2
apiserver_request_total{code="200",resource="pods",subresource="",verb="PUT"} 3000
apiserver_request_total{code="200",resource="pods",subresource="",verb="GET"} 7
apiserver_request_duration_seconds_sum{resource="events",subresource="",verb="POST"} 1.5
apiserver_request_duration_seconds_count{resource="events",subresource="",verb="POST"} 3000
`
	want := map[string]float64{"POST pods/binding": 3000, "PUT pods": 3002, "seconds POST events": 1.5}
	if diff := cmp.Diff(want, writeCounts([]byte(page))); diff != "" {
		t.Errorf("writeCounts (-want +got):\n%s", diff)
	}
	if got := completedBindings([]byte(page + `apiserver_request_total{code="409",resource="pods",subresource="binding",verb="POST"} 4
`)); got != 3004 {
		t.Errorf("completedBindings = %v, want 3004 (every code counted, as writeCounts does)", got)
	}
}

// TestFormatTimeline: each -timeline sample reads seconds since the
// contender started, then the API server's completed bindings over the pods
// the watch has seen bound.
func TestFormatTimeline(t *testing.T) {
	for name, tc := range map[string]struct {
		samples []timelineSample
		want    string
	}{
		"none": {nil, ""},
		"watch behind the API server": {
			[]timelineSample{{T: 300 * time.Millisecond}, {T: 3600 * time.Millisecond, Server: 1640, Seen: 827}},
			"0.3s:0/0 3.6s:1640/827",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, formatTimeline(tc.samples)); diff != "" {
				t.Errorf("formatTimeline (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSteadyRate: the rate between 10% and 90% of the bindings, each
// moment interpolated between the samples around it; zero when the samples
// do not reach both.
func TestSteadyRate(t *testing.T) {
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	for name, tc := range map[string]struct {
		samples []timelineSample
		want    float64
	}{
		"none": {nil, 0},
		// 100 at 1s, 900 at 3s: 800 bindings in 2s.
		"on samples": {[]timelineSample{{T: 0}, {T: sec(1), Server: 100}, {T: sec(3), Server: 900}, {T: sec(4), Server: 1000}}, 400},
		// 100 halfway from 0s to 2s (1s), 900 a third of the way from 3s to 7s
		// (4s 1/3): 800 bindings in 3s 1/3.
		"interpolated": {[]timelineSample{{T: 0}, {T: sec(2), Server: 200}, {T: sec(3), Server: 500}, {T: sec(7), Server: 1700}}, 240},
		"never at 90%": {[]timelineSample{{T: 0}, {T: sec(2), Server: 500}}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, steadyRate(tc.samples, 1000), cmpopts.EquateApprox(1e-6, 0)); diff != "" {
				t.Errorf("steadyRate (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRenderCPU: the table shows the CPU over the first-bind..last-bind
// window where a run measured it, the whole run's otherwise, as medians.
func TestRenderCPU(t *testing.T) {
	cases := map[string]struct {
		results []result
		want    string
	}{
		"window preferred": {
			results: []result{{
				Contender: KubeScheduler, Workload: "w",
				CPU:       map[string]float64{KubeScheduler: 3, "etcd": 1, "kube-apiserver": 4},
				WindowCPU: map[string]float64{KubeScheduler: 2, "etcd": 0.5, "kube-apiserver": 3, KeyOther: 0.25, KeyBench: 0.125},
			}},
			want: "| kube-scheduler | 2.00 | 0.50 | 3.00 | 5.50 | 0.25 | 0.12 |\n",
		},
		"whole run without a window, median of three": {
			results: []result{
				{Contender: Bindgate, Workload: "w", CPU: map[string]float64{Bindgate: 1, "etcd": 1, "kube-apiserver": 1}},
				{Contender: Bindgate, Workload: "w", CPU: map[string]float64{Bindgate: 2, "etcd": 2, "kube-apiserver": 2}},
				{Contender: Bindgate, Workload: "w", CPU: map[string]float64{Bindgate: 9, "etcd": 9, "kube-apiserver": 9}},
				{Contender: Bindgate, Workload: "other", CPU: map[string]float64{Bindgate: 50, "etcd": 50, "kube-apiserver": 50}},
			},
			want: "| bindgate | 2.00 | 2.00 | 2.00 | 6.00 | – | – |\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			renderCPU(&b, tc.results, "w")
			const header = "|---|---|---|---|---|---|---|\n"
			got := b.String()
			i := strings.Index(got, header)
			if i < 0 {
				t.Fatalf("no CPU table in:\n%s", got)
			}
			if diff := cmp.Diff(tc.want, got[i+len(header):]); diff != "" {
				t.Errorf("CPU table rows (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPerPod: CPU per pod between two snapshots, only for processes in
// both.
func TestPerPod(t *testing.T) {
	before := cpuSnapshot{"etcd": time.Second, "kube-apiserver": 2 * time.Second}
	after := cpuSnapshot{"etcd": 3 * time.Second, "kube-apiserver": 6 * time.Second, "bindgate": time.Second}
	want := map[string]float64{"etcd": 1, "kube-apiserver": 2}
	if diff := cmp.Diff(want, perPod(before, after, 2000)); diff != "" {
		t.Errorf("perPod (-want +got):\n%s", diff)
	}
}

// TestStrayProcesses: a process is named by its program's base name,
// whatever its directory and arguments; other programs, and entries that
// are not processes, are not.
func TestStrayProcesses(t *testing.T) {
	proc := fakeProc(t, map[string]string{
		"101/cmdline":  "/work/main/bin/kube-apiserver\x00--secure-port=1\x00",
		"102/cmdline":  "/work/main/bin/etcd\x00--data-dir=/tmp/x\x00",
		"103/cmdline":  "/usr/bin/bash\x00/work/main/bin/etcd\x00",
		"104/cmdline":  "bindgate-helper\x00",
		"105/cmdline":  "",
		"self/cmdline": "/work/main/bin/bindgate\x00",
	})
	got := strayProcesses(proc, benchProcesses)
	slices.Sort(got)
	if diff := cmp.Diff([]string{"101 kube-apiserver", "102 etcd"}, got); diff != "" {
		t.Errorf("strayProcesses (-want +got):\n%s", diff)
	}
}

// fakeProc is a /proc holding the given files, by path under it
// ("101/cmdline", "201/task/201/status").
func fakeProc(t *testing.T, files map[string]string) string {
	t.Helper()
	proc := t.TempDir()
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(proc, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return proc
}

// TestActivity: read and write system calls from /proc/PID/io, context
// switches summed over every thread; a process whose files are missing
// has no counts.
func TestActivity(t *testing.T) {
	proc := fakeProc(t, map[string]string{
		"201/io":              "rchar: 100\nwchar: 200\nsyscr: 31\nsyscw: 47\nread_bytes: 0\n",
		"201/task/201/status": "Name:\tetcd\nvoluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t2\n",
		"201/task/205/status": "Name:\tetcd\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t1\n",
		"202/task/202/status": "Name:\tkube-apiserver\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t0\n",
	})
	got := activity(proc, map[string]int{"etcd": 201, "kube-apiserver": 202, "gone": 299})
	want := map[string]float64{"etcd reads": 31, "etcd writes": 47, "etcd switches": 20, "kube-apiserver switches": 5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("activity (-want +got):\n%s", diff)
	}
}

// TestControlPlanePIDs: one kube-apiserver and one etcd are named, a
// program that runs twice is not (its counts could not be told apart),
// and the contender and the bench are added.
func TestControlPlanePIDs(t *testing.T) {
	proc := fakeProc(t, map[string]string{
		"301/cmdline": "/work/main/bin/kube-apiserver\x00--secure-port=1\x00",
		"302/cmdline": "/work/main/bin/etcd\x00",
		"303/cmdline": "/work/other/bin/etcd\x00",
	})
	got := controlPlanePIDs(proc, "bindgate", 400)
	want := map[string]int{"kube-apiserver": 301, "bindgate": 400, KeyBench: os.Getpid()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("controlPlanePIDs (-want +got):\n%s", diff)
	}
}

// TestMachineBusy: busy time is user, nice, system, irq, softirq and steal,
// in ticks of 10 ms; idle and iowait are not.
func TestMachineBusy(t *testing.T) {
	got, err := machineBusy([]byte("cpu  100 2 30 5000 40 5 6 7 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := 150 * 10 * time.Millisecond; got != want {
		t.Errorf("machineBusy = %v, want %v", got, want)
	}
	if _, err := machineBusy([]byte("intr 1 2 3\n")); err == nil {
		t.Error("machineBusy of a page without the cpu line: want an error")
	}
}

// TestRenderPairs: each contender against its baseline, repetition by
// repetition, only where both ran without an error, for the workload asked.
func TestRenderPairs(t *testing.T) {
	res := func(c string, rep int, pps float64, err string) result {
		return result{Contender: c, Workload: "w", Rep: rep, PodsPerSec: pps, Err: err}
	}
	// sideBySide is one pair per value of pps, repetitions 1, 2, …: the
	// contender at that rate, its baseline at base.
	sideBySide := func(contender, baseline string, base float64, pps ...float64) []result {
		var out []result
		for i, v := range pps {
			out = append(out, res(contender, i+1, v, ""), res(baseline, i+1, base, ""))
		}
		return out
	}
	cases := map[string]struct {
		results []result
		want    string
	}{
		"both pairs": {
			results: append(sideBySide(BindgateSchedulerName, KubeScheduler, 200, 300, 100, 200),
				res(Bindgate, 1, 90, ""), res(UngateKubeScheduler, 1, 100, ""),
				result{Contender: Bindgate, Workload: "other", Rep: 1, PodsPerSec: 1},
			),
			want: "\nPer repetition (each pair run side by side): schedulerName bindgate × kube-scheduler: 1.50, 0.50, 1.00 (median 1.00); gated bindgate × ungate+kube-scheduler: 0.90 (median 0.90).\n",
		},
		"five pairs: an interval for the median": {
			results: sideBySide(BindgateSchedulerName, KubeScheduler, 100, 90, 110, 95, 80, 100),
			want:    "\nPer repetition (each pair run side by side): schedulerName bindgate × kube-scheduler: 0.90, 1.10, 0.95, 0.80, 1.00 (median 0.95; 0.80–1.10 holds the median with 93% confidence).\n",
		},
		"a failed run leaves its pair out": {
			results: []result{
				res(Bindgate, 1, 90, ""), res(UngateKubeScheduler, 1, 100, ""),
				res(Bindgate, 2, 0, "placement check: node n1 overcommitted"), res(UngateKubeScheduler, 2, 100, ""),
			},
			want: "\nPer repetition (each pair run side by side): gated bindgate × ungate+kube-scheduler: 0.90 (median 0.90).\n",
		},
		"no baseline": {
			results: []result{res(Bindgate, 1, 90, "")},
			want:    "",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			renderPairs(&b, tc.results, "w")
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("renderPairs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlotRef: the report links to its plot relative to its own directory,
// or by absolute path when the plot is elsewhere.
func TestPlotRef(t *testing.T) {
	abs, err := filepath.Abs("elsewhere/p.png")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ out, plot, want string }{
		"make bench":             {out: "docs/benchmarks.md", plot: "docs/benchmarks.png", want: "benchmarks.png"},
		"a report in /tmp":       {out: "/tmp/b1.md", plot: "/tmp/b1.png", want: "b1.png"},
		"a plot outside its dir": {out: "docs/benchmarks.md", plot: "elsewhere/p.png", want: abs},
	} {
		t.Run(name, func(t *testing.T) {
			if got := plotRef(tc.out, tc.plot); got != tc.want {
				t.Errorf("plotRef(%q, %q) = %q, want %q", tc.out, tc.plot, got, tc.want)
			}
		})
	}
}

// TestMedianInterval: the order statistics that hold the median with at
// least 90% confidence, and the coverage they have.
func TestMedianInterval(t *testing.T) {
	seq := func(n int) []float64 { // n, n-1, ..., 1: unsorted on purpose
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(n - i)
		}
		return xs
	}
	type out struct {
		Lo, Hi, Coverage float64
		OK               bool
	}
	cases := map[string]struct {
		xs   []float64
		want out
	}{
		"four: too few":               {xs: seq(4)},
		"five: smallest to largest":   {xs: seq(5), want: out{1, 5, 1 - 2.0/32, true}},
		"eight: second to seventh":    {xs: seq(8), want: out{2, 7, 1 - 2*9.0/256, true}},
		"ten: second to ninth":        {xs: seq(10), want: out{2, 9, 1 - 2*11.0/1024, true}},
		"twelve: third to tenth":      {xs: seq(12), want: out{3, 10, 1 - 2*79.0/4096, true}},
		"ties keep their order value": {xs: []float64{1, 1, 1, 2, 2}, want: out{1, 2, 1 - 2.0/32, true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got out
			got.Lo, got.Hi, got.Coverage, got.OK = medianInterval(tc.xs)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("medianInterval(%v) (-want +got):\n%s", tc.xs, diff)
			}
		})
	}
}

// TestEtcdWork: etcd's counters are summed over their label sets, byte
// counts turned into KiB, and metrics that only share a prefix ignored;
// their growth is divided by the pods bound.
func TestEtcdWork(t *testing.T) {
	cases := map[string]struct {
		raw  string
		want map[string]float64
	}{
		"unlabelled, labelled and histogram counts": {
			raw: `# HELP etcd_server_proposals_committed_total The total number of consensus proposals committed.
etcd_server_proposals_committed_total 120
etcd_disk_wal_fsync_duration_seconds_bucket{le="0.001"} 30
etcd_disk_wal_fsync_duration_seconds_count 40
etcd_disk_wal_fsync_duration_seconds_sum 0.5
etcd_mvcc_put_total 7
etcd_network_client_grpc_received_bytes_total{type="unary"} 1024
etcd_network_client_grpc_received_bytes_total{type="stream"} 2048
etcd_server_proposals_committed_total_other 99
`,
			want: map[string]float64{"proposals": 120, "WAL fsyncs": 40, "puts": 7, "KiB received": 3},
		},
		"nothing known": {raw: "go_goroutines 12\n", want: map[string]float64{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, sumCounters([]byte(tc.raw))); diff != "" {
				t.Errorf("sumCounters (-want +got):\n%s", diff)
			}
		})
	}
	got := perPodCounts(map[string]float64{"proposals": 100, "puts": 5}, map[string]float64{"proposals": 300, "puts": 5, "txns": 9}, 100)
	if diff := cmp.Diff(map[string]float64{"proposals": 2, "puts": 0}, got); diff != "" {
		t.Errorf("perPodCounts (-want +got):\n%s", diff)
	}
}

// TestRenderWarmUp: the report names the warm-up only when one ran, and
// reports a warm-up that failed (its placement check included) instead of
// leaving it to the log.
func TestRenderWarmUp(t *testing.T) {
	const ran = "One unreported warm-up run"
	cases := map[string]struct {
		warm       *result
		wantRan    bool
		wantFailed string
	}{
		"no warm-up": {},
		"warm-up ok": {warm: &result{Contender: BindgateSchedulerName, Workload: "500 nodes / 3000 pods", Check: "ok"}, wantRan: true},
		"warm-up failed its placement check": {
			warm:       &result{Contender: Bindgate, Workload: "500 nodes / 3000 pods", Err: "placement check: node-1 overcommitted"},
			wantRan:    true,
			wantFailed: "**The warm-up run (bindgate, 500 nodes / 3000 pods) failed: placement check: node-1 overcommitted.**",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := render(nil, nil, tc.warm, nil, "")
			if strings.Contains(got, ran) != tc.wantRan {
				t.Errorf("report mentions the warm-up: %v, want %v", !tc.wantRan, tc.wantRan)
			}
			if tc.wantFailed != "" && !strings.Contains(got, tc.wantFailed) {
				t.Errorf("report does not say %q:\n%s", tc.wantFailed, got)
			}
			if tc.wantFailed == "" && strings.Contains(got, "failed:") {
				t.Errorf("report says a warm-up failed:\n%s", got)
			}
		})
	}
}

// TestPeakRSS: the bench's own VmHWM ("NNN kB" in /proc/self/status) reads
// as a positive number of MiB.
func TestPeakRSS(t *testing.T) {
	if got := peakRSS(os.Getpid()); got <= 0 {
		t.Errorf("peakRSS of the test process = %v MiB, want > 0", got)
	}
}
