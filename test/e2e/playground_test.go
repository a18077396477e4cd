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

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestPlayground runs `make playground`'s program the way the README's
// newcomer does, with --exit-after-demo: the demo must settle (batch pods
// Running on batch nodes, the approval pod waiting in Permit, the unfit pod
// reported with FailedScheduling), the approval must bind the waiting pod,
// and teardown must leave no child process behind.
func TestPlayground(t *testing.T) {
	for _, name := range []string{"kube-apiserver", "etcd", "kwok", "bindgate"} {
		tool(t, name) // make test builds them; fail (or skip with -short) before anything else
	}
	bin := filepath.Join(t.TempDir(), "playground")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./test/playground")
	build.Dir = repoPath()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the playground: %v\n%s", err, out)
	}

	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "--exit-after-demo", "--nodes=6", "--pods=6", "--demo-timeout=60s", "--bin="+repoPath("bin"))
	cmd.Dir = repoPath()
	out, err := cmd.CombinedOutput()
	output := string(out)
	t.Logf("playground ran in %v", time.Since(start).Round(100*time.Millisecond))
	if err != nil {
		t.Fatalf("playground --exit-after-demo: %v\n%s", err, output)
	}

	for _, want := range []string{
		// every demo pod bound, or waiting with the documented reason
		"batch pods bound by policy batch-pool and Running (kwok): 6/6",
		"demo/needs-approval is waiting in Permit (condition scheduling.bindgate.dev/Permitted=False, reason Waiting)",
		"batch/too-big cannot fit; FailedScheduling: 0/6 nodes are available:",
		"Insufficient cpu",
		"gang train-1 waits for its last member (demo/train-1-0: gang: gang train-1: 3/4 members exist, none reserved)",
		"gang train-1: all 4 members bound together and Running on general-",
		"(topology: one zone, topology.kubernetes.io/zone=zone-",
		// the guide
		"export KUBECONFIG=",
		"kubectl get bp",
		"kubectl get pods -A -o wide",
		"kubectl get events -A --field-selector reason=Scheduled",
		"/metrics",
		"annotate pod -n demo needs-approval scheduling.bindgate.dev/approved=true",
		// the approval releases the pod
		"approved pod bound to general-",
		"teardown done",
	} {
		if !strings.Contains(output, want) {
			t.Errorf("output lacks %q", want)
		}
	}

	m := regexp.MustCompile(`child processes: (.*)`).FindStringSubmatch(output)
	if m == nil {
		t.Fatalf("output lists no child processes:\n%s", output)
	}
	var pids []int
	for _, f := range strings.Fields(m[1]) {
		_, v, _ := strings.Cut(f, "=")
		pid, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("bad child %q in %q", f, m[1])
		}
		pids = append(pids, pid)
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kwok", "bindgate"} {
		if !strings.Contains(m[1], name+"=") {
			t.Errorf("child %s not listed in %q", name, m[1])
		}
	}
	for _, pid := range pids {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
			t.Errorf("child process %d survived the playground's teardown", pid)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", output)
	}
}

// TestPlaygroundStopsThroughMake runs `make playground` as the README says,
// headless: make builds the playground and execs it, the playground prints
// its PID, and a SIGINT to that PID tears everything down and ends make
// with exit code 0.
func TestPlaygroundStopsThroughMake(t *testing.T) {
	for _, name := range []string{"kube-apiserver", "etcd", "kwok", "kubectl", "helm"} {
		tool(t, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "playground", "NODES=4", "PODS=2", "PLAYGROUND_ARGS=--headless --demo-timeout=60s")
	cmd.Dir = repoPath()
	// Its own process group: the SIGINT below goes to the playground alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	pidLine := regexp.MustCompile(`playground \(pid (\d+)\)`)
	var pid int
	for pid == 0 || !strings.Contains(out.String(), "bindgate playground is ready") {
		if m := pidLine.FindStringSubmatch(out.String()); m != nil {
			pid, _ = strconv.Atoi(m[1])
		}
		select {
		case err := <-done:
			t.Fatalf("make playground ended before the playground was ready: %v\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("the playground was not ready in time:\n%s", out.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		t.Fatalf("SIGINT to the playground (pid %d): %v", pid, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("make playground after SIGINT: %v, want exit code 0\n%s", err, out.String())
		}
	case <-ctx.Done():
		t.Fatalf("make playground did not end after SIGINT:\n%s", out.String())
	}
	output := out.String()
	for _, want := range []string{"exec " + repoPath("bin", "playground"), "teardown done"} {
		if !strings.Contains(output, want) {
			t.Errorf("output lacks %q:\n%s", want, output)
		}
	}
	if strings.Contains(output, "make: ***") {
		t.Errorf("make reported an error:\n%s", output)
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
