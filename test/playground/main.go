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

// Command playground runs bindgate on a local control plane with simulated
// nodes and a guided demo, for newcomers without a cluster: etcd and
// kube-apiserver on loopback (built from pinned modules into bin/), kwok
// playing the kubelets of NODES nodes in two pools, the operator, the sample
// BindingPolicies and a handful of demo pods. Run it with `make playground`,
// which builds what is missing first and then execs this program's binary
// (bin/playground). Ctrl-C (or SIGINT/SIGTERM to the PID it prints) tears
// everything down — child processes, control plane, temp dir — and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bindgate/bindgate/internal/testenv"
)

// Names used by the demo.
const (
	batchNamespace = "batch"
	demoNamespace  = "demo"
	approvalPod    = "needs-approval"
	unfitPod       = "too-big"
	gangGroup      = "train-1"
	gangSize       = 4 // the training-gangs sample's minMember

	kwokAnnotation = "kwok.x-k8s.io/node"
	poolLabel      = "pool"
	gpuLabel       = "nvidia.com/gpu.present"
	batchPool      = "batch"
	generalPool    = "general"
	taintKey       = "dedicated"
)

type options struct {
	nodes, pods   int
	exitAfterDemo bool
	headless      bool
	timeout       time.Duration
	bin           string
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 20, "Number of simulated nodes (half pool=batch, tainted dedicated=batch:NoSchedule; half pool=general).")
	flag.IntVar(&o.pods, "pods", 10, "Number of plain demo pods in the team=batch namespace.")
	flag.BoolVar(&o.exitAfterDemo, "exit-after-demo", false,
		"Run the demo, approve the waiting pod, check that it binds, then tear down and exit (non-zero on failure). For tests.")
	flag.BoolVar(&o.headless, "headless", false, "Keep running without a terminal (no prompt) until SIGINT/SIGTERM.")
	flag.DurationVar(&o.timeout, "demo-timeout", 2*time.Minute, "How long the demo may take to settle before the playground gives up.")
	flag.StringVar(&o.bin, "bin", filepath.Join(testenv.RepoRoot(), "bin"),
		"Directory holding kube-apiserver, etcd, kubectl, kwok and bindgate (make playground builds them).")
	flag.Parse()
	if o.nodes < 2 || o.pods < 0 {
		fmt.Fprintln(os.Stderr, "--nodes must be at least 2 (two pools) and --pods at least 0")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	teardownWithParent()
	defer stop()
	pg := &playground{opts: o, start: time.Now()}
	pg.step("playground (pid %d); Ctrl-C or `kill -INT %d` stops it and cleans up", os.Getpid(), os.Getpid())
	err := pg.run(ctx)
	if err != nil && ctx.Err() != nil {
		err = nil // interrupted: a normal way to stop
	}
	if err != nil {
		pg.step("FAILED: %v", err)
	}
	pg.teardown()
	if err != nil {
		if pg.dir != "" {
			fmt.Fprintln(os.Stderr, "(the temp dir with the operator and kwok logs was removed; the last lines of a failed child's log are above)")
		}
		os.Exit(1)
	}
}

type playground struct {
	opts  options
	start time.Time

	dir        string // temp dir: kubeconfig, logs
	kubeconfig string
	cp         *controlPlane
	cs         kubernetes.Interface
	cl         client.Client
	children   []*child

	metricsAddr string
	probeAddr   string
}

// step prints one line of progress with the time since start.
func (p *playground) step(format string, args ...any) {
	fmt.Printf("[%5.1fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

func (p *playground) run(ctx context.Context) error {
	o := p.opts
	for _, b := range []string{"kube-apiserver", "etcd", "kwok", "bindgate"} {
		if _, err := os.Stat(filepath.Join(o.bin, b)); err != nil {
			return fmt.Errorf("%s is missing from %s: run `make playground`, which builds it", b, o.bin)
		}
	}
	var err error
	if p.dir, err = os.MkdirTemp("", "bindgate-playground-"); err != nil {
		return err
	}

	p.step("starting etcd and kube-apiserver on loopback (data in a temp dir) ...")
	if p.cp, err = startControlPlane(o.bin, p.dir); err != nil {
		return err
	}
	p.kubeconfig, p.cs, p.cl = p.cp.kubeconfig, p.cp.cs, p.cp.cl
	p.step("control plane up at %s; BindingPolicy CRD installed; kubeconfig %s", p.cp.cfg.Host, p.kubeconfig)

	p.step("creating %d nodes: %d in pool=batch (tainted dedicated=batch:NoSchedule), %d in pool=general (8 CPU, 32Gi, 110 pods each) ...",
		o.nodes, batchNodes(o.nodes), o.nodes-batchNodes(o.nodes))
	if err := createNodes(ctx, p.cs, o.nodes); err != nil {
		return fmt.Errorf("creating nodes: %w", err)
	}

	p.step("starting kwok to play the kubelets of those nodes ...")
	stages := filepath.Join(p.dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, kwokStages, 0o600); err != nil {
		return err
	}
	kwok, err := p.startChild(ctx, "kwok", filepath.Join(o.bin, "kwok"),
		"--kubeconfig="+p.kubeconfig,
		"--config="+stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+kwokAnnotation+"=fake",
		"--manage-single-node=",
		"--cidr=10.0.0.1/16",
		"--node-ip=10.255.0.1",
		"--server-address=",
		"-v=WARN",
	)
	if err != nil {
		return err
	}
	if err := waitNodesManaged(ctx, p.cs, o.nodes, kwok); err != nil {
		return fmt.Errorf("waiting for kwok to take the nodes: %w", err)
	}
	p.step("kwok (pid %d) manages all %d nodes; they are Ready", kwok.pid(), o.nodes)

	if p.metricsAddr, err = freeAddr(); err != nil {
		return err
	}
	if p.probeAddr, err = freeAddr(); err != nil {
		return err
	}
	p.step("starting the operator (bin/bindgate) ...")
	op, err := p.startChild(ctx, "bindgate", filepath.Join(o.bin, "bindgate"),
		"--kubeconfig="+p.kubeconfig,
		"--leader-elect=false",
		"--operator-namespace=default", // holds the seal key Secret
		"--metrics-bind-address="+p.metricsAddr,
		"--metrics-secure=false", // plain http for the curl below
		"--health-probe-bind-address="+p.probeAddr,
		"--zap-log-level=info",
	)
	if err != nil {
		return err
	}
	if err := waitReady(ctx, "http://"+p.probeAddr+"/readyz", op); err != nil {
		return fmt.Errorf("waiting for the operator: %w", err)
	}
	p.step("operator (pid %d) ready; metrics at http://%s/metrics", op.pid(), p.metricsAddr)
	if pids := childPIDs(); len(pids) > 0 {
		p.step("child processes: %s", pids)
	}

	names, err := applySamples(ctx, p.cl, filepath.Join(testenv.RepoRoot(), "config", "samples"))
	if err != nil {
		return fmt.Errorf("applying config/samples: %w", err)
	}
	p.step("applied the sample BindingPolicies: %s", strings.Join(names, ", "))

	d := &demo{p: p}
	if err := d.create(ctx); err != nil {
		return fmt.Errorf("creating the demo: %w", err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := d.wait(waitCtx); err != nil {
		return fmt.Errorf("the demo did not settle within %v: %w", o.timeout, err)
	}
	p.guide()

	// The gang's last member arrives: all four bind together.
	if err := d.completeGang(waitCtx); err != nil {
		return fmt.Errorf("the gang did not bind: %w", err)
	}

	if o.exitAfterDemo {
		p.step("--exit-after-demo: approving %s/%s ...", demoNamespace, approvalPod)
		if err := d.approve(waitCtx); err != nil {
			return err
		}
		node, err := d.waitApprovedBound(waitCtx)
		if err != nil {
			return fmt.Errorf("waiting for the approved pod: %w", err)
		}
		p.step("approved pod bound to %s and Running", node)
		return nil
	}
	go d.watchApproval(ctx)
	if !o.headless {
		fmt.Println("Press Ctrl-C to stop the playground and clean up.")
	}
	select {
	case <-ctx.Done():
	case err := <-firstExit(p.children):
		return err
	}
	fmt.Println()
	p.step("stopping ...")
	return nil
}

func batchNodes(n int) int { return (n + 1) / 2 }

// guide prints what to try next.
func (p *playground) guide() {
	bin := p.opts.bin
	lines := []string{
		"",
		fmt.Sprintf("==> bindgate playground is ready (%.1fs). In another terminal:", time.Since(p.start).Seconds()),
		"",
		"  export PATH=" + bin + ":$PATH",
		"  export KUBECONFIG=" + p.kubeconfig,
		"",
		"  kubectl get bp                                                  # the sample BindingPolicies",
		"  kubectl get nodes -L pool                                       # kwok nodes in two pools",
		"  kubectl get pods -A -o wide                                     # demo pods and their nodes",
		"  kubectl get events -A --field-selector reason=Scheduled         # what bindgate bound where",
		"  kubectl get events -A --field-selector reason=FailedScheduling  # and what it could not",
		"  curl -s http://" + p.metricsAddr + "/metrics | grep ^bindgate_     # operator metrics",
		"",
		"  Release the pod waiting for manual approval:",
		fmt.Sprintf("  kubectl --kubeconfig %s annotate pod -n %s %s scheduling.bindgate.dev/approved=true", p.kubeconfig, demoNamespace, approvalPod),
		"",
		"  Logs: " + filepath.Join(p.dir, "bindgate.log") + ", " + filepath.Join(p.dir, "kwok.log"),
		"",
	}
	fmt.Println(strings.Join(lines, "\n"))
}

// teardown stops the children (process groups), the control plane and
// removes the temp dir. Safe to call at any point of run.
func (p *playground) teardown() {
	t := time.Now()
	p.step("tearing down ...")
	for i := len(p.children) - 1; i >= 0; i-- {
		p.children[i].stop()
	}
	if p.cp != nil {
		if err := p.cp.stop(); err != nil {
			p.step("stopping the control plane: %v", err)
		}
	}
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
	}
	p.step("teardown done in %.1fs: child processes stopped, control plane stopped, temp dir removed", time.Since(t).Seconds())
}

// firstExit reports the first child that exits on its own.
func firstExit(children []*child) <-chan error {
	ch := make(chan error, len(children))
	for _, c := range children {
		go func() {
			<-c.done
			ch <- fmt.Errorf("unexpectedly: %w", c.exitErr())
		}()
	}
	return ch
}

// childPIDs lists this process's children as "name=pid ..." (Linux /proc).
func childPIDs() string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return ""
	}
	self := os.Getpid()
	var out []string
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(data)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		var state string
		var ppid int
		if _, err := fmt.Sscanf(s[closing+1:], " %s %d", &state, &ppid); err != nil || ppid != self {
			continue
		}
		out = append(out, fmt.Sprintf("%s=%d", s[open+1:closing], pid))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

var errTimeout = errors.New("timed out")

// poll calls f every interval until it returns true or an error, or ctx ends.
func poll(ctx context.Context, interval time.Duration, f func() (bool, error)) error {
	for {
		ok, err := f()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return errTimeout
			}
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

func podReady(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning
}
