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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for name, tc := range map[string]struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		"empty":           {p: 0.5},
		"one":             {in: ms(7), p: 0.99, want: 7 * time.Millisecond},
		"median unsorted": {in: ms(5, 1, 3, 2, 4), p: 0.5, want: 3 * time.Millisecond},
		"p99 of 100": {in: ms(func() []int {
			v := make([]int, 100)
			for i := range v {
				v[i] = 100 - i
			}
			return v
		}()...), p: 0.99, want: 100 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, percentile(tc.in, tc.p)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestOutputs: the samples become a CSV and a PNG.
func TestOutputs(t *testing.T) {
	dir := t.TempDir()
	samples := []sample{{t: 0, bound: 0, rss: 80 << 20, goroutines: 200}, {t: time.Minute, bound: 120, live: 40, rss: 90 << 20, goroutines: 230, faults: 12}}
	if err := writeCSV(filepath.Join(dir, "samples.csv"), samples); err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want := "seconds,pods_bound,pods_live,rss_mib,goroutines,faults_injected\n0,0,0,80.0,200,0\n60,120,40,90.0,230,12\n"
	if diff := cmp.Diff(want, string(csv)); diff != "" {
		t.Errorf("samples.csv (-want +got):\n%s", diff)
	}
	if err := plotSamples(filepath.Join(dir, "soak.png"), samples); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(filepath.Join(dir, "soak.png"))
	if err != nil {
		t.Fatal(err)
	}
	if len(png) < 1000 || string(png[1:4]) != "PNG" {
		t.Errorf("soak.png is not a PNG (%d bytes)", len(png))
	}
}
