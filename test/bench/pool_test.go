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
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// benchLog is a log as the bench prints it: a warm-up, then repetitions of
// runs, each with its header and figures among other lines.
func benchLog(workload string, runs ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, ">> warm-up (not reported): %s, bindgate-schedulername\n   warm-up: 999 pods/s, placement check: ok\n   1 pods/s, total 1s, peak RSS 1 MiB, 2.00 writes/pod, p50 0s, p99 0s\n", workload)
	for _, r := range runs {
		var c string
		var rep, pps, rss int
		if _, err := fmt.Sscanf(r, "%s %d %d %d", &c, &rep, &pps, &rss); err != nil {
			panic(err)
		}
		fmt.Fprintf(&b, ">> %s, %s, repetition %d/9\n   placement check: ok\n", workload, c, rep)
		if pps == 0 {
			b.WriteString("   error: timed out\n")
			continue
		}
		fmt.Fprintf(&b, "   %d pods/s, total 3.5s, peak RSS %d MiB, 2.00 writes/pod, p50 0s, p99 0s\n   API server time per write: POST events 4.2ms\n", pps, rss)
	}
	return b.String()
}

// TestPool: pairs are a contender and its baseline in one repetition of one
// log, never across logs; warm-ups and failed runs are left out; workload
// names may hold commas; the interval is the sign test's at 95%.
func TestPool(t *testing.T) {
	const plain = "500 nodes / 3000 pods"
	const named = "PodGroups arriving: 100 PodGroups of 8 (16 CPU each), members created one by one"
	dir := t.TempDir()
	logs := map[string]string{
		"a.log": benchLog(plain,
			"bindgate-schedulername 1 900 130", "kube-scheduler 1 1000 140",
			"kube-scheduler 2 800 150", "bindgate-schedulername 2 880 128",
			"bindgate-schedulername 3 700 131", "kube-scheduler 3 0 0", // failed: no pair
			"bindgate 1 500 135", "ungate+kube-scheduler 1 500 139",
		) + benchLog(named, "bindgate-schedulername 1 600 95", "kube-scheduler 1 400 91"),
		// The same repetition numbers in another log: pairs of their own.
		"b.log": benchLog(plain,
			"bindgate-schedulername 1 1100 129", "kube-scheduler 1 1000 145",
			"kube-scheduler 2 1000 141", "bindgate-schedulername 2 1200 132",
			"bindgate-schedulername 3 1000 127", "kube-scheduler 3 1000 139",
			"bindgate-schedulername 4 950 133", "kube-scheduler 4 1000 138",
		),
	}
	var files []string
	for _, name := range []string{"a.log", "b.log"} {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(logs[name]), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var all []logRun
	for i, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := parseLog(fh, i)
		_ = fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, rs...)
	}
	got := poolLogs(all)
	// Six plain schedulerName pairs: 0.9, 1.1, 1.1, 1.2, 1.0, 0.95. At 95%
	// only the extremes hold the median of six (coverage 1 - 2/64).
	want := []pooled{
		{
			Workload: plain, Name: "schedulerName bindgate × kube-scheduler",
			Ratios: []float64{0.9, 1.1, 1.1, 1.2, 1.0, 0.95}, Above: 3, Below: 2,
			RSS: []float64{130, 128, 129, 132, 127, 133}, BaselineRSS: []float64{140, 150, 145, 141, 139, 138},
			Lo: 0.9, Hi: 1.2, Coverage: 1 - 2.0/64, IntervalAvailable: true,
		},
		{
			Workload: plain, Name: "gated bindgate × ungate+kube-scheduler",
			Ratios: []float64{1}, RSS: []float64{135}, BaselineRSS: []float64{139},
		},
		{
			Workload: named, Name: "schedulerName bindgate × kube-scheduler",
			Ratios: []float64{1.5}, Above: 1, RSS: []float64{95}, BaselineRSS: []float64{91}, RSSAbove: 1,
		},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("pooled pairs (-want +got):\n%s", diff)
	}

	var out, errOut strings.Builder
	if code := poolMain(files, &out, &errOut); code != 0 {
		t.Fatalf("poolMain = %d: %s", code, errOut.String())
	}
	for _, line := range []string{
		"  schedulerName bindgate × kube-scheduler: 6 pairs, median 1.050, 0.90–1.20 holds the median with 96.9% confidence; 3 above 1.0, 2 below, 1 level\n",
		"    ratios: 0.90 1.10 1.10 1.20 1.00 0.95\n",
		"    peak RSS (MiB): median 130 against 140, above its baseline in 0 of 6 pairs\n",
		"  gated bindgate × ungate+kube-scheduler: 1 pair, median 1.000, too few pairs for a 95% interval; 0 above 1.0, 0 below, 1 level\n",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q:\n%s", line, out.String())
		}
	}
	if code := poolMain(nil, &out, &errOut); code != 2 {
		t.Errorf("poolMain with no log = %d, want 2", code)
	}
}
