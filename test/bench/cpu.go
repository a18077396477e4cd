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
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/kubernetes"

	"github.com/bindgate/bindgate/internal/testenv"
)

// Where CPU goes: every process's CPU seconds per bound pod, and a CPU
// profile of kube-apiserver split by the kind of request the samples served.

// ticks converts a count of the kernel's clock ticks (USER_HZ, 1/100 s on
// Linux) into a duration.
func ticks(n float64) time.Duration { return time.Duration(n * float64(10*time.Millisecond)) }

// procCPU is a process's user+system CPU time from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces) start at ")".
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	// utime and stime are fields 14 and 15 of stat (11 and 12 here), in
	// clock ticks.
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return ticks(ut + st), nil
}

// cpuSnapshot is the CPU time used so far by kube-apiserver, etcd and the
// contender.
type cpuSnapshot map[string]time.Duration

// cpu takes the snapshot; apiMetrics is kube-apiserver's /metrics page,
// already scraped for the write counts.
func (cp *controlPlane) cpu(ctx context.Context, apiMetrics []byte, contender string, pid int) cpuSnapshot {
	s := cpuSnapshot{}
	if d, err := testenv.ProcessCPU(apiMetrics); err == nil {
		s["kube-apiserver"] = d
	}
	if u := cp.env.ControlPlane.Etcd.URL; u != nil {
		if raw, err := testenv.Get(ctx, u.String()+"/metrics"); err == nil {
			if d, err := testenv.ProcessCPU(raw); err == nil {
				s["etcd"] = d
			}
		}
	}
	if pid > 0 {
		if d, err := procCPU(pid); err == nil {
			s[contender] = d
		}
	}
	return withOther(s)
}

// etcdWork names etcd's counters of the work the API server gives it:
// proposals committed (writes through raft), WAL fsyncs and backend
// commits (how many proposals share one: fewer per pod when writes arrive
// together), key-value operations, and the bytes of its clients' requests
// and responses (watch events included).
var etcdWork = []struct{ key, metric string }{
	{"proposals", "etcd_server_proposals_committed_total"},
	{"WAL fsyncs", "etcd_disk_wal_fsync_duration_seconds_count"},
	{"backend commits", "etcd_disk_backend_commit_duration_seconds_count"},
	{"puts", "etcd_mvcc_put_total"},
	{"ranges", "etcd_mvcc_range_total"},
	{"txns", "etcd_mvcc_txn_total"},
	{"KiB received", "etcd_network_client_grpc_received_bytes_total"},
	{"KiB sent", "etcd_network_client_grpc_sent_bytes_total"},
}

// etcdWork reads etcd's etcdWork counters (byte counts in KiB); nil when
// its metrics cannot be read.
func (cp *controlPlane) etcdWork(ctx context.Context) map[string]float64 {
	u := cp.env.ControlPlane.Etcd.URL
	if u == nil {
		return nil
	}
	raw, err := testenv.Get(ctx, u.String()+"/metrics")
	if err != nil {
		return nil
	}
	return sumCounters(raw)
}

// sumCounters adds up each etcdWork metric over its label sets.
func sumCounters(raw []byte) map[string]float64 {
	key := map[string]string{}
	names := make([]string, 0, len(etcdWork))
	for _, w := range etcdWork {
		key[w.metric] = w.key
		names = append(names, w.metric)
	}
	out := map[string]float64{}
	eachSample(raw, names, func(name string, _ map[string]string, v float64) {
		if strings.HasPrefix(key[name], "KiB") {
			v /= 1024
		}
		out[key[name]] += v
	})
	return out
}

// perPodCounts divides the growth of each counter by pods.
func perPodCounts(before, after map[string]float64, pods int) map[string]float64 {
	out := map[string]float64{}
	for k, a := range after {
		if b, ok := before[k]; ok && pods > 0 {
			out[k] = (a - b) / float64(pods)
		}
	}
	return out
}

// perPod turns two snapshots into CPU milliseconds per bound pod.
func perPod(before, after cpuSnapshot, pods int) map[string]float64 {
	out := map[string]float64{}
	for k, a := range after {
		if b, ok := before[k]; ok && pods > 0 {
			out[k] = float64((a - b).Microseconds()) / 1000 / float64(pods)
		}
	}
	return out
}

// requestKinds classify kube-apiserver CPU samples: the first rule whose
// substring appears in any frame of a sample's stack names it. The API
// server runs a request's storage work in a goroutine of its own
// (finisher.finishRequest), so the rules name frames of that work too.
var requestKinds = []struct{ name, frame string }{
	{"PATCH pods", "handlers.PatchResource"},
	{"PATCH pods", "handlers.(*patcher)"},
	{"PUT pods", "handlers.UpdateResource"},
	{"POST pods/binding", "handlers.CreateNamedResource"},
	{"POST pods/binding", "storage.(*BindingREST)"},
	{"POST (events, pods)", "handlers.CreateResource"},
	{"watch", "handlers.handleWatch"},
	{"watch", "cacher.(*cacheWatcher)"},
	{"watch", "cacher.(*cachingObject)"},
	{"GET/LIST", "handlers.ListResource"},
	{"GET/LIST", "handlers.GetResource"},
	{"authentication", "pkg/authentication/"},
	{"garbage collection", "runtime.gcBgMarkWorker"},
	{"watch cache", "storage/cacher."},
	{"etcd client", "storage/etcd3."},
}

// KindOther collects the samples no rule names: HTTP/2, TLS, the filter
// chain outside handlers, the runtime.
const KindOther = "other (HTTP/2, TLS, filters, runtime)"

// apiserverProfile takes a CPU profile of kube-apiserver for d, saves it
// under dir, and returns the share of its CPU samples by request kind.
func apiserverProfile(ctx context.Context, cs kubernetes.Interface, d time.Duration, dir, name string) (map[string]float64, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(int(d/time.Second))).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("profiling kube-apiserver: %w", err)
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".pprof"), raw, 0o644); err != nil {
			return nil, err
		}
	}
	p, err := profile.ParseData(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing the profile: %w", err)
	}
	cpuIdx := len(p.SampleType) - 1 // "cpu" nanoseconds
	out := map[string]float64{}
	var total float64
	for _, s := range p.Sample {
		v := float64(s.Value[cpuIdx])
		out[classify(s)] += v
		total += v
	}
	if total == 0 {
		return nil, fmt.Errorf("the profile has no samples")
	}
	for k := range out {
		out[k] /= total
	}
	return out, nil
}

func classify(s *profile.Sample) string {
	var frames []string
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if l.Function != nil {
				frames = append(frames, l.Function.Name)
			}
		}
	}
	for _, k := range requestKinds {
		for _, f := range frames {
			if strings.Contains(f, k.frame) {
				return k.name
			}
		}
	}
	return KindOther
}

// benchProcesses are the programs a run starts: one of them already running
// when the bench starts is another run's (an interrupted bench leaves its
// control plane behind) or a test suite's, and takes CPU from every
// contender.
var benchProcesses = []string{"kube-apiserver", "etcd", "kube-scheduler", "bindgate"}

// strayProcesses lists the running processes whose program is one of
// names, as "PID program", reading /proc (nil elsewhere).
func strayProcesses(proc string, names []string) []string {
	var out []string
	for prog, pids := range processPIDs(proc, names) {
		for _, pid := range pids {
			out = append(out, fmt.Sprintf("%d %s", pid, prog))
		}
	}
	return out
}

// processPIDs finds, under proc (/proc), the processes other than the
// bench whose program (argv[0]'s base name) is one of names, by name.
func processPIDs(proc string, names []string) map[string][]int {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil
	}
	out := map[string][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(proc, e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		argv0, _, _ := bytes.Cut(raw, []byte{0})
		if prog := filepath.Base(string(argv0)); slices.Contains(names, prog) {
			out[prog] = append(out[prog], pid)
		}
	}
	return out
}

// activity counts, for each named process, what the kernel counted of its
// system calls and scheduling so far, summed over its threads: "NAME
// reads" and "NAME writes" are its read and write system calls (syscr and
// syscw of /proc/PID/io), "NAME switches" its context switches, voluntary
// and not (/proc/PID/task/*/status). These show how many times a process
// was woken and wrote for the same requests, which CPU per pod alone does
// not: a process fed a steady trickle of requests sends and wakes once per
// request, one fed bursts once per burst.
func activity(proc string, pids map[string]int) map[string]float64 {
	out := map[string]float64{}
	for name, pid := range pids {
		dir := filepath.Join(proc, strconv.Itoa(pid))
		if ioStats, err := os.ReadFile(filepath.Join(dir, "io")); err == nil {
			for key, field := range map[string]string{"reads": "syscr", "writes": "syscw"} {
				if v, ok := procNumber(ioStats, field); ok {
					out[name+" "+key] = v
				}
			}
		}
		tasks, err := os.ReadDir(filepath.Join(dir, "task"))
		if err != nil {
			continue
		}
		var switches float64
		for _, t := range tasks {
			status, err := os.ReadFile(filepath.Join(dir, "task", t.Name(), "status"))
			if err != nil {
				continue // the thread ended meanwhile
			}
			for _, field := range []string{"voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"} {
				if v, ok := procNumber(status, field); ok {
					switches += v
				}
			}
		}
		out[name+" switches"] = switches
	}
	return out
}

// procField reads the value of a "key: value" line of a /proc file
// (status, io), spaces trimmed.
func procField(data []byte, key string) (string, bool) {
	for line := range strings.SplitSeq(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// procNumber is procField's value as a number.
func procNumber(data []byte, key string) (float64, bool) {
	v, ok := procField(data, key)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil
}

// controlPlanePIDs names the running kube-apiserver and etcd (one each:
// a second one of either is left out, as its counts could not be told
// apart), the contender's process when it has one, and the bench's own.
func controlPlanePIDs(proc, contender string, pid int) map[string]int {
	out := map[string]int{KeyBench: os.Getpid()}
	for prog, pids := range processPIDs(proc, []string{"kube-apiserver", "etcd"}) {
		if len(pids) == 1 {
			out[prog] = pids[0]
		}
	}
	if pid > 0 {
		out[contender] = pid
	}
	return out
}

// machineBusy is the CPU time the whole machine has spent busy (user, nice,
// system, irq, softirq and steal over every CPU), from the first line of
// /proc/stat.
func machineBusy(stat []byte) (time.Duration, error) {
	line, _, _ := bytes.Cut(stat, []byte{'\n'})
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("unexpected /proc/stat line %q", line)
	}
	var n float64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return 0, fmt.Errorf("parsing /proc/stat: %w", err)
		}
		n += v
	}
	return ticks(n), nil
}

// KeyOther names, in a cpuSnapshot, the machine's busy time not spent by
// any process the snapshot names nor by the bench itself (which runs the
// tracker and, for ungate+kube-scheduler, the ungating controller): other
// programs on the machine, and the kernel's own work.
const KeyOther = "other processes"

// KeyBench names, in a cpuSnapshot, the bench's own CPU time: the pods'
// tracker (and, for ungate+kube-scheduler, the ungating controller). It
// shares the machine with the contender.
const KeyBench = "the bench"

// withOther adds KeyOther to s: the machine's busy time less every process
// in s and the bench's own.
func withOther(s cpuSnapshot) cpuSnapshot {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	busy, err := machineBusy(stat)
	if err != nil {
		return s
	}
	self, err := procCPU(os.Getpid())
	if err != nil {
		return s
	}
	other := busy - self
	for _, d := range s {
		other -= d
	}
	s[KeyOther] = other
	s[KeyBench] = self
	return s
}
