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
	"fmt"
	"image/color"
	"math"
	"runtime"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medianInterval is a distribution-free confidence interval for the median
// of the population xs were drawn from, at 90% (medianIntervalAt).
func medianInterval(xs []float64) (lo, hi, coverage float64, ok bool) {
	return medianIntervalAt(xs, 0.9)
}

// medianIntervalAt is the order statistics x(k) and x(n+1-k) with the
// largest k whose coverage, 1 - 2·P(B < k) for B binomial(n, ½), is at
// least level. ok is false when even the smallest and largest value hold
// the median with less than level (below 5 values at 90%, 6 at 95%).
func medianIntervalAt(xs []float64, level float64) (lo, hi, coverage float64, ok bool) {
	n := len(xs)
	if n == 0 {
		return 0, 0, 0, false
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	// below[k] = P(B < k+1) = P(B <= k).
	below, p, c := 0.0, math.Pow(0.5, float64(n)), 1.0
	k, cov := 0, 0.0
	for j := 0; j < n/2; j++ {
		below += c * p // P(B = j) = C(n, j) / 2^n
		c = c * float64(n-j) / float64(j+1)
		if cv := 1 - 2*below; cv >= level {
			k, cov = j+1, cv
		} else {
			break
		}
	}
	if k == 0 {
		return 0, 0, 0, false
	}
	return s[k-1], s[n-k], cov, true
}

type summary struct {
	podsPerSec, rss, writes, p50, p99 float64
	runs                              int
	errs                              []string
	writesBy                          map[string][]float64
}

func summarize(results []result, workload, contender string) summary {
	var pps, rss, wr, p50, p99 []float64
	s := summary{writesBy: map[string][]float64{}}
	for _, r := range results {
		if r.Workload != workload || r.Contender != contender {
			continue
		}
		if r.Err != "" {
			s.errs = append(s.errs, r.Err)
			continue
		}
		s.runs++
		pps = append(pps, r.PodsPerSec)
		rss = append(rss, r.PeakRSSMiB)
		wr = append(wr, r.WritesPerPod)
		p50 = append(p50, float64(r.P50.Milliseconds()))
		p99 = append(p99, float64(r.P99.Milliseconds()))
		for k, v := range r.Writes {
			s.writesBy[k] = append(s.writesBy[k], v)
		}
	}
	s.podsPerSec, s.rss, s.writes, s.p50, s.p99 = median(pps), median(rss), median(wr), median(p50), median(p99)
	return s
}

// render writes the report. warm is the unreported warm-up run (nil when
// none ran); a warm-up that failed, placement check included, is reported.
func render(workloads []string, results []result, warm *result, args []string, plot string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %d CPUs (%s/%s) with `make bench`", time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	if len(args) > 0 {
		fmt.Fprintf(&b, " (`go run ./test/bench %s`)", strings.Join(args, " "))
	}
	b.WriteString(".\n\n")
	b.WriteString("Each contender runs as its own process against a **fresh** control plane (etcd + kube-apiserver v1.37.2 built from pinned modules), ")
	b.WriteString("with every node (Ready, untainted, 32 CPU / 128Gi / 110 pods) and pod (100m / 128Mi) created before it starts. ")
	if warm != nil {
		b.WriteString("One unreported warm-up run of the first workload's first contender came first (`-warmup=false` skips it: the first run of a bench process was often the slowest of its process, whichever contender it was). ")
		if warm.Err != "" {
			fmt.Fprintf(&b, "**The warm-up run (%s, %s) failed: %s.** ", warm.Contender, warm.Workload, warm.Err)
		}
	}
	b.WriteString("Contenders alternate order between repetitions, each next to its baseline; figures are medians, and the ratios of each pair run side by side are listed under each table. Only ratios within one run are meaningful: the machine is small and noisy.\n\n")
	b.WriteString("- **bindgate**: gated pods, one BindingPolicy with no permit conditions, the built binary, `--leader-elect=false --durable-reservations=waiting` (a single replica).\n")
	b.WriteString("- **bindgate-schedulername** (for comparison): the same, but the pods are not gated and name `schedulerName: bindgate` (what the pod webhook's `--pod-webhook-mode=scheduler-name` does) — no gate to remove, so the same writes as kube-scheduler.\n")
	b.WriteString("- **kube-scheduler** v1.37.2 from the same pinned module: ungated pods, default profile, `clientConnection.qps/burst` 5000, leader election off.\n")
	b.WriteString("- **ungate+kube-scheduler**: what a user of scheduling gates has today without bindgate: pods carry a foreign gate that a controller in the bench lifts (32 workers, as fast as the API server allows, with a client and field manager of its own, as Kueue's ungating does), then kube-scheduler binds them. The controller starts once kube-scheduler has bound a probe pod in a namespace of its own, so that, as in a cluster, both run before the workload arrives and no gate is lifted outside the measured window. The baseline for gated bindgate.\n")
	b.WriteString("- **raw-bind**: the bench itself POSTs `pods/binding` from 32 workers with no placement logic — the write ceiling of the machine.\n\n")
	b.WriteString("Every run ends with a placement check (no node overcommitted; anti-affine groups on distinct nodes; zone skew at most 1); a run that fails it is reported as failed.\n\n")
	b.WriteString("pods/s is pods bound divided by the first-bind→last-bind window (stream: by the time from start to the last bind); ")
	b.WriteString("writes/pod counts every mutating API request the contender caused (`apiserver_request_total`), events included; latency is pod create → bound as seen by a watch.\n\n")
	for _, w := range workloads {
		fmt.Fprintf(&b, "## %s\n\n", w)
		b.WriteString("| contender | runs | pods/s | × kube-scheduler | × ungate+kube-scheduler | × raw ceiling | peak RSS MiB | writes/pod | p50 | p99 |\n|---|---|---|---|---|---|---|---|---|---|\n")
		ks := summarize(results, w, KubeScheduler)
		ug := summarize(results, w, UngateKubeScheduler)
		raw := summarize(results, w, RawBind)
		for _, c := range []string{Bindgate, BindgateSchedulerName, KubeScheduler, UngateKubeScheduler, RawBind} {
			s := summarize(results, w, c)
			if s.runs == 0 && len(s.errs) == 0 {
				continue
			}
			ratio := func(base summary) string {
				if base.podsPerSec == 0 {
					return "–"
				}
				return fmt.Sprintf("%.2f", s.podsPerSec/base.podsPerSec)
			}
			rss := "–"
			if s.rss > 0 {
				rss = fmt.Sprintf("%.0f", s.rss)
			}
			lat := func(ms float64) string {
				if ms == 0 {
					return "–"
				}
				return fmt.Sprintf("%.0f ms", ms)
			}
			fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %s | %s | %.2f | %s | %s |\n", c, s.runs, s.podsPerSec, ratio(ks), ratio(ug), ratio(raw), rss, s.writes, lat(s.p50), lat(s.p99))
			for _, e := range s.errs {
				fmt.Fprintf(&b, "\n> %s failed once: %s\n", c, e)
			}
		}
		renderPairs(&b, results, w)
		renderGangs(&b, results, w)
		renderCPU(&b, results, w)
		for _, c := range []string{Bindgate, BindgateSchedulerName, KubeScheduler} {
			s := summarize(results, w, c)
			if len(s.writesBy) == 0 {
				continue
			}
			var parts []string
			for k, v := range s.writesBy {
				parts = append(parts, fmt.Sprintf("%s %.2f", k, median(v)))
			}
			sort.Strings(parts)
			fmt.Fprintf(&b, "\n%s writes per pod: %s\n", c, strings.Join(parts, ", "))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "![bound pods over time](%s)\n", plot)
	return b.String()
}

// renderCPU writes where the CPU went, per bound pod: medians by process,
// and kube-apiserver's split by request kind from its profile.
func renderCPU(b *strings.Builder, results []result, workload string) {
	byProc := map[string]map[string][]float64{}
	byKind := map[string]map[string]float64{}
	kinds := map[string]bool{}
	for _, r := range results {
		if r.Workload != workload || r.Err != "" {
			continue
		}
		if byProc[r.Contender] == nil {
			byProc[r.Contender] = map[string][]float64{}
		}
		cpu := r.WindowCPU
		if len(cpu) == 0 {
			cpu = r.CPU
		}
		for k, v := range cpu {
			byProc[r.Contender][k] = append(byProc[r.Contender][k], v)
		}
		if len(r.APIServerByKind) > 0 && byKind[r.Contender] == nil {
			byKind[r.Contender] = r.APIServerByKind
			for k := range r.APIServerByKind {
				kinds[k] = true
			}
		}
	}
	if len(byProc) == 0 {
		return
	}
	b.WriteString("\nCPU per bound pod from the first bind to the last, the window pods/s is measured over (ms, medians; the contender's own process, etcd, kube-apiserver; other processes: the rest of the machine's busy time, the bench's own excepted, to within a few percent of the total, as the kernel counts a process's time and the machine's apart — a run sharing the machine shows here; the bench: its own process, which watches the pods and, for ungate+kube-scheduler, is the ungating controller too, so that contender's whole cost is its total plus part of this column):\n\n")
	b.WriteString("| contender | own process | etcd | kube-apiserver | total | other processes | the bench |\n|---|---|---|---|---|---|---|\n")
	for _, c := range []string{Bindgate, BindgateSchedulerName, KubeScheduler, UngateKubeScheduler, RawBind} {
		m, ok := byProc[c]
		if !ok {
			continue
		}
		own, etcd, api := median(m[c]), median(m["etcd"]), median(m["kube-apiserver"])
		ownS := "–"
		if len(m[c]) > 0 {
			ownS = fmt.Sprintf("%.2f", own)
		}
		otherS, benchS := "–", "–"
		if len(m[KeyOther]) > 0 {
			otherS = fmt.Sprintf("%.2f", median(m[KeyOther]))
		}
		if len(m[KeyBench]) > 0 {
			benchS = fmt.Sprintf("%.2f", median(m[KeyBench]))
		}
		fmt.Fprintf(b, "| %s | %s | %.2f | %.2f | %.2f | %s | %s |\n", c, ownS, etcd, api, own+etcd+api, otherS, benchS)
	}
	if len(byKind) == 0 {
		return
	}
	var order []string
	for k := range kinds {
		order = append(order, k)
	}
	sort.Strings(order)
	b.WriteString("\nkube-apiserver CPU per bound pod by request kind (ms; shares from a 5 s CPU profile of the first repetition, scaled to its CPU per pod):\n\n| request kind |")
	var cs []string
	for _, c := range []string{Bindgate, BindgateSchedulerName, KubeScheduler, UngateKubeScheduler, RawBind} {
		if _, ok := byKind[c]; ok {
			cs = append(cs, c)
			fmt.Fprintf(b, " %s |", c)
		}
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(cs)) + "\n")
	for _, k := range order {
		fmt.Fprintf(b, "| %s |", k)
		for _, c := range cs {
			fmt.Fprintf(b, " %.2f |", byKind[c][k])
		}
		b.WriteString("\n")
	}
}

// plotCurves draws bound pods over time for the first repetition of each
// contender on the first batch workload.
func plotCurves(path string, results []result) error {
	p := plot.New()
	p.Title.Text = "Bound pods over time (first repetition)"
	p.X.Label.Text = "seconds since the contender started"
	p.Y.Label.Text = "pods bound"
	colors := map[string]color.RGBA{
		Bindgate: {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, KubeScheduler: {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, RawBind: {R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
		BindgateSchedulerName: {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, UngateKubeScheduler: {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	}
	var workload string
	drawn := map[string]bool{}
	for _, r := range results {
		if r.Err != "" || len(r.Curve) == 0 || strings.HasPrefix(r.Workload, "stream") {
			continue
		}
		if workload == "" {
			workload = r.Workload
		}
		if r.Workload != workload || drawn[r.Contender] {
			continue
		}
		drawn[r.Contender] = true
		pts := make(plotter.XYs, len(r.Curve))
		for i, c := range r.Curve {
			pts[i].X, pts[i].Y = c.T, float64(c.Bound)
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = colors[r.Contender]
		line.Width = vg.Points(2)
		p.Add(line)
		p.Legend.Add(r.Contender, line)
	}
	p.Title.Text += " — " + workload
	p.Legend.Top = false
	p.Legend.Left = false
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}

// renderGangs adds, for a gang workload, gangs placed per second and the
// fraction of gangs inside one rack (medians).
func renderGangs(b *strings.Builder, results []result, w string) {
	for _, c := range []string{Bindgate, BindgateSchedulerName, KubeScheduler, UngateKubeScheduler} {
		var gps, frac []float64
		for _, r := range results {
			if r.Workload == w && r.Contender == c && r.Err == "" && r.Gangs {
				gps = append(gps, r.PodsPerSec/gangSize)
				frac = append(frac, r.GangsOneRack)
			}
		}
		if len(gps) > 0 {
			fmt.Fprintf(b, "\n%s: %.1f gangs/s, %.0f%% of gangs within one rack.\n", c, median(gps), 100*median(frac))
		}
	}
}

// pairs are the comparisons the acceptance targets name: each contender
// against its baseline.
var pairs = []struct{ contender, baseline, name string }{
	{BindgateSchedulerName, KubeScheduler, "schedulerName bindgate × kube-scheduler"},
	{Bindgate, UngateKubeScheduler, "gated bindgate × ungate+kube-scheduler"},
}

// renderPairs writes each contender's ratio to its baseline repetition by
// repetition. The two run next to each other in every repetition (the
// default contender order puts them side by side, and reversing the order
// keeps them so), so a ratio of one pair is taken at one state of the
// machine, while the medians of the table above may come from different
// ones.
func renderPairs(b *strings.Builder, results []result, workload string) {
	var runs []logRun
	for _, r := range results {
		if r.Workload == workload && r.Err == "" {
			runs = append(runs, logRun{Rep: r.Rep, Workload: r.Workload, Contender: r.Contender, PodsPerSec: r.PodsPerSec, PeakRSSMiB: r.PeakRSSMiB})
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Rep < runs[j].Rep })
	var lines []string
	for _, p := range poolLogs(runs) {
		parts := make([]string, len(p.Ratios))
		for i, r := range p.Ratios {
			parts[i] = fmt.Sprintf("%.2f", r)
		}
		line := fmt.Sprintf("%s: %s (median %.2f", p.Name, strings.Join(parts, ", "), median(p.Ratios))
		if lo, hi, cov, ok := medianInterval(p.Ratios); ok {
			line += fmt.Sprintf("; %.2f–%.2f holds the median with %.0f%% confidence", lo, hi, 100*math.Floor(100*cov)/100)
		}
		lines = append(lines, line+")")
	}
	if len(lines) > 0 {
		fmt.Fprintf(b, "\nPer repetition (each pair run side by side): %s.\n", strings.Join(lines, "; "))
	}
}
