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
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// logRun is one measured run read from a bench log.
type logRun struct {
	// Log numbers the file it came from, so that repetitions of different
	// logs never pair.
	Log, Rep            int
	Workload, Contender string
	PodsPerSec          float64
	PeakRSSMiB          float64
}

// A pair of one repetition in one log: which log, which repetition.
type pairKey struct {
	log, rep int
}

// pooled is one contender against its baseline over every pair of the logs
// read by parseLog, for one workload.
type pooled struct {
	Workload, Name string
	// Ratios are the contender's pods/s over its baseline's, pair by
	// pair, in the order the logs and repetitions came.
	Ratios            []float64
	Above, Below      int
	RSS, BaselineRSS  []float64
	RSSAbove          int
	Lo, Hi, Coverage  float64
	IntervalAvailable bool
}

var (
	runHeader = regexp.MustCompile(`^>> (.+), ([a-z+-]+), repetition (\d+)/\d+$`)
	runLine   = regexp.MustCompile(`^\s+(\d+) pods/s, .*peak RSS (\d+) MiB`)
)

// parseLog reads one bench log (the bench's standard output): each measured
// run's header, ">> WORKLOAD, CONTENDER, repetition I/N", and the line of its
// figures, "NNN pods/s, ..., peak RSS X MiB, ...". Warm-up runs and runs
// that failed (no figures line) are left out. log numbers the file, so that
// repetitions of different logs never pair.
func parseLog(r io.Reader, log int) ([]logRun, error) {
	var out []logRun
	var cur *logRun
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if m := runHeader.FindStringSubmatch(line); m != nil {
			rep, _ := strconv.Atoi(m[3])
			cur = &logRun{Log: log, Workload: m[1], Contender: m[2], Rep: rep}
			continue
		}
		if strings.HasPrefix(line, ">> ") {
			cur = nil // a warm-up, not measured
			continue
		}
		if m := runLine.FindStringSubmatch(line); m != nil && cur != nil {
			cur.PodsPerSec, _ = strconv.ParseFloat(m[1], 64)
			cur.PeakRSSMiB, _ = strconv.ParseFloat(m[2], 64)
			out = append(out, *cur)
			cur = nil
		}
	}
	return out, sc.Err()
}

// poolLogs pairs, within each log and repetition, each contender with its
// baseline (pairs), and pools the ratios of every log per workload, in the
// order the workloads first appear and, within one, the order of results.
// The interval is the sign test's at 95% (medianIntervalAt). renderPairs
// pairs one run's results with it too.
func poolLogs(results []logRun) []pooled {
	var order []string
	pps := map[string]map[string]map[pairKey]logRun{} // workload, contender, pair
	for _, r := range results {
		if r.PodsPerSec <= 0 {
			continue
		}
		if pps[r.Workload] == nil {
			pps[r.Workload] = map[string]map[pairKey]logRun{}
			order = append(order, r.Workload)
		}
		if pps[r.Workload][r.Contender] == nil {
			pps[r.Workload][r.Contender] = map[pairKey]logRun{}
		}
		pps[r.Workload][r.Contender][pairKey{r.Log, r.Rep}] = r
	}
	var out []pooled
	for _, w := range order {
		for _, p := range pairs {
			pl := pooled{Workload: w, Name: p.name}
			for _, r := range results {
				if r.Workload != w || r.Contender != p.contender || r.PodsPerSec <= 0 {
					continue
				}
				b, ok := pps[w][p.baseline][pairKey{r.Log, r.Rep}]
				if !ok {
					continue
				}
				ratio := r.PodsPerSec / b.PodsPerSec
				pl.Ratios = append(pl.Ratios, ratio)
				switch {
				case ratio > 1:
					pl.Above++
				case ratio < 1:
					pl.Below++
				}
				pl.RSS = append(pl.RSS, r.PeakRSSMiB)
				pl.BaselineRSS = append(pl.BaselineRSS, b.PeakRSSMiB)
				if r.PeakRSSMiB > b.PeakRSSMiB {
					pl.RSSAbove++
				}
			}
			if len(pl.Ratios) == 0 {
				continue
			}
			pl.Lo, pl.Hi, pl.Coverage, pl.IntervalAvailable = medianIntervalAt(pl.Ratios, 0.95)
			out = append(out, pl)
		}
	}
	return out
}

// renderPooled writes poolLogs' result as text.
func renderPooled(w io.Writer, ps []pooled) {
	last := ""
	for _, p := range ps {
		if p.Workload != last {
			fmt.Fprintf(w, "%s\n", p.Workload)
			last = p.Workload
		}
		noun := "pairs"
		if len(p.Ratios) == 1 {
			noun = "pair"
		}
		fmt.Fprintf(w, "  %s: %d %s, median %.3f", p.Name, len(p.Ratios), noun, median(p.Ratios))
		if p.IntervalAvailable {
			fmt.Fprintf(w, ", %.2f–%.2f holds the median with %.1f%% confidence", p.Lo, p.Hi, 100*p.Coverage)
		} else {
			fmt.Fprintf(w, ", too few pairs for a 95%% interval")
		}
		fmt.Fprintf(w, "; %d above 1.0, %d below, %d level\n", p.Above, p.Below, len(p.Ratios)-p.Above-p.Below)
		parts := make([]string, len(p.Ratios))
		for i, r := range p.Ratios {
			parts[i] = fmt.Sprintf("%.2f", r)
		}
		fmt.Fprintf(w, "    ratios: %s\n", strings.Join(parts, " "))
		fmt.Fprintf(w, "    peak RSS (MiB): median %.0f against %.0f, above its baseline in %d of %d pairs\n",
			median(p.RSS), median(p.BaselineRSS), p.RSSAbove, len(p.RSS))
	}
}

// poolMain is the bench's -pool mode: it reads the logs named and prints the
// pooled pairs. It returns the process's exit code.
func poolMain(files []string, stdout, stderr io.Writer) int {
	if len(files) == 0 {
		fmt.Fprintln(stderr, "-pool: name one or more bench logs (the bench's standard output)")
		return 2
	}
	var all []logRun
	for i, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		rs, err := parseLog(fh, i)
		_ = fh.Close()
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", f, err)
			return 1
		}
		all = append(all, rs...)
	}
	ps := poolLogs(all)
	if len(ps) == 0 {
		fmt.Fprintln(stderr, "-pool: no pair of a contender and its baseline in the same repetition")
		return 1
	}
	renderPooled(stdout, ps)
	return 0
}
