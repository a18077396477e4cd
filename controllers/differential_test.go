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

package controllers_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv/invariants"
)

// diffTolerance is how many fewer pods bindgate may bind than
// kube-scheduler on the same workload, as a fraction of the pods. Where room
// is short, which pods fit depends on the order pods are taken in and on
// ties between equal nodes (kube-scheduler breaks them at random): the same
// constraints then admit slightly different sets. 3% of the pods bounds
// that; a placement that ignored a constraint, or left room unused, shows
// as violations or as a larger gap.
const diffTolerance = 0.03

// diffWorkload is one seeded mix: nodes of several sizes in 3 zones, some
// tainted or labelled ssd; pods of several sizes with required and
// preferred anti-affinity, pod affinity, zone spread, host ports, node
// selectors and tolerations.
type diffWorkload struct {
	nodes []*corev1.Node
	pods  []*corev1.Pod
}

func genWorkload(seed uint64, set string, numNodes, numPods int) diffWorkload {
	r := rand.New(rand.NewPCG(seed, 1))
	var w diffWorkload
	for i := range numNodes {
		name := fmt.Sprintf("%s-n%03d", set, i)
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				corev1.LabelHostname: name, "set": set, corev1.LabelTopologyZone: fmt.Sprintf("%s-z%d", set, i%3),
			}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewQuantity(int64(2+r.IntN(5)), resource.DecimalSI),
					corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", 4+r.IntN(13))),
					corev1.ResourcePods:   resource.MustParse("110"),
				},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		}
		if r.IntN(2) == 0 {
			n.Labels["disk"] = "ssd"
		}
		if r.IntN(10) == 0 {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
		}
		w.nodes = append(w.nodes, n)
	}
	for i := range numPods {
		b := newPod("", fmt.Sprintf("p%03d", i))
		b.p.Spec.SchedulingGates = nil
		b.p.Spec.NodeSelector = map[string]string{"set": set}
		b.req(corev1.ResourceCPU, fmt.Sprintf("%dm", 100+100*r.IntN(10))).req(corev1.ResourceMemory, fmt.Sprintf("%dMi", 128*(1+r.IntN(8))))
		switch k := r.IntN(20); {
		case k < 3:
			antiAffinity(fmt.Sprintf("aa%d", r.IntN(4)), corev1.LabelHostname, true)(b)
		case k < 5:
			antiAffinity(fmt.Sprintf("pa%d", r.IntN(3)), corev1.LabelHostname, false)(b)
		case k < 8:
			spread(fmt.Sprintf("sp%d", r.IntN(3)), corev1.LabelTopologyZone, corev1.DoNotSchedule)(b)
		case k < 9:
			spread(fmt.Sprintf("sh%d", r.IntN(2)), corev1.LabelHostname, corev1.ScheduleAnyway)(b)
		case k < 11:
			hostPort(int32(9000 + r.IntN(3)))(b)
		case k < 13:
			b.p.Spec.NodeSelector["disk"] = "ssd"
		case k < 14:
			b.tolerate("dedicated")
		case k < 15:
			// Affinity to the zone of any anti-affinity group member.
			b.p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"aa0", "aa1", "aa2", "aa3"},
				}}},
				TopologyKey: corev1.LabelTopologyZone,
			}}}}
		}
		w.pods = append(w.pods, b.p)
	}
	return w
}

// TestDifferential places one seeded workload with bindgate and, in the
// same test on a twin set of nodes, with kube-scheduler v1.37.2 (the
// binary the Makefile builds). Then every bound pod is re-checked by
// running kube-scheduler's own Filter plugins against the final cluster
// state with the pod taken out: bindgate must have no violation, and bind
// no fewer pods than kube-scheduler minus diffTolerance. The seed is
// printed; BINDGATE_DIFF_SEED replays one.
func TestDifferential(t *testing.T) {
	bin := filepath.Join(env.AssetsDir, "kube-scheduler")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kube-scheduler is needed (make builds it into bin/): %v", err)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("BINDGATE_DIFF_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BINDGATE_DIFF_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay: BINDGATE_DIFF_SEED=%d)", seed, seed)
	const numNodes, numPods = 60, 500
	ctx := context.Background()

	startManager(t, 16)
	// Two policies share the workload by pod label.
	polA, polB := uniq("diff-a"), uniq("diff-b")
	for i, name := range []string{polA, polB} {
		p := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: bindgatev1alpha1.BindingPolicySpec{
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"half": strconv.Itoa(i)}},
		}}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) })
		waitReady(t, name)
	}
	set := uniq("d")
	cfgPath := filepath.Join(t.TempDir(), "scheduler.yaml")
	cfg := fmt.Sprintf("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nclientConnection:\n  kubeconfig: %s\n  qps: 1000\n  burst: 1000\nleaderElection:\n  leaderElect: false\n", env.Kubeconfig)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ks := exec.CommandContext(ctx, bin, "--config", cfgPath, "--secure-port=0", "-v=0")
	logf, err := os.Create(filepath.Join(t.TempDir(), "kube-scheduler.log"))
	if err != nil {
		t.Fatal(err)
	}
	ks.Stdout, ks.Stderr = logf, logf
	if err := ks.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ks.Process.Kill(); _ = ks.Wait() })

	byContender := map[string]string{} // contender -> namespace
	for _, who := range []string{"bindgate", "kube-scheduler"} {
		w := genWorkload(seed, set+"-"+who[:1], numNodes, numPods)
		for _, n := range w.nodes {
			(&nodeBuilder{n: n}).create(t)
		}
		ns := namespace(t, nil)
		byContender[who] = ns
		var wg sync.WaitGroup
		errs := make(chan error, len(w.pods))
		for i, p := range w.pods {
			p.Namespace = ns
			if who == "bindgate" {
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}}
				p.Labels["half"] = strconv.Itoa(i % 2)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := env.Client.Create(ctx, p); err != nil {
					errs <- err
				}
			}()
			if i%32 == 31 {
				wg.Wait()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	bound := map[string]int{}
	for who, ns := range byContender {
		nodes := settledFor(t, ns, numPods, 3*time.Minute)
		for _, n := range nodes {
			if n != "" {
				bound[who]++
			}
		}
	}
	t.Logf("bound: bindgate %d, kube-scheduler %d of %d pods each", bound["bindgate"], bound["kube-scheduler"], numPods)

	violations := recheck(t, byContender)
	for who, v := range violations {
		if len(v) > 0 && who == "bindgate" {
			t.Errorf("seed %d: %d bindgate pods breach kube-scheduler's Filter plugins; first: %s", seed, len(v), v[0])
		}
		if len(v) > 0 && who == "kube-scheduler" {
			t.Logf("kube-scheduler's own placement re-checked: %d findings (first: %s)", len(v), v[0])
		}
	}
	if min := float64(bound["kube-scheduler"]) - diffTolerance*numPods; float64(bound["bindgate"]) < min {
		t.Errorf("seed %d: bindgate bound %d pods, kube-scheduler %d (at least %.0f wanted)", seed, bound["bindgate"], bound["kube-scheduler"], min)
	}
}

// settledFor is settled with a timeout.
func settledFor(t *testing.T, ns string, n int, timeout time.Duration) map[string]string {
	t.Helper()
	out := map[string]string{}
	eventually(t, timeout, fmt.Sprintf("%d pods of %s bound or unschedulable", n, ns), func() (bool, error) {
		clear(out)
		for _, p := range listPods(t, ns) {
			c := podCondition(&p, corev1.PodScheduled)
			switch {
			case p.Spec.NodeName != "":
				out[p.Name] = p.Spec.NodeName
			case c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable:
				out[p.Name] = ""
			default:
				return false, nil
			}
		}
		return len(out) == n, nil
	})
	return out
}

// recheck re-runs kube-scheduler's Filter plugins on the bound pods of the
// given namespaces (invariants.Recheck) and lists the breaches per contender.
func recheck(t *testing.T, byContender map[string]string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for who, ns := range byContender {
		breaches, err := invariants.Recheck(context.Background(), env.Clientset, env.Client, listPods(t, ns))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range breaches {
			out[who] = append(out[who], b.String())
		}
	}
	return out
}
