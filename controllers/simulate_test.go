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
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/cmd"
	"github.com/bindgate/bindgate/internal/explain"
)

// TestSimulateMatchesTheAppliedPolicy runs `bindgate simulate` on a policy
// that is not applied, checks that nothing was written, applies the policy
// and checks that the operator does what the simulation said: the same
// pods bound to the same nodes, the same pod waiting on the same node for
// the same condition, the same pod refused with the same message.
func TestSimulateMatchesTheAppliedPolicy(t *testing.T) {
	startManager(t, 4)
	ctx := context.Background()
	name := uniq("simulated")
	app := uniq("sim-app")
	manifest := `apiVersion: scheduling.bindgate.dev/v1alpha1
kind: BindingPolicy
metadata:
  name: ` + name + `
spec:
  priority: 100
  podSelector:
    matchLabels: {app: ` + app + `}
  nodeSelector:
    matchLabels: {pool: ` + name + `}
  permit:
    timeout: 10m
    conditions:
    - name: hold
      expression: pod.metadata.labels[?'hold'].orValue('') != 'yes'
`
	file := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	big := newNode(uniq(name+"-big")).label("pool", name).alloc(corev1.ResourceCPU, "16").create(t).Name
	small := newNode(uniq(name+"-small")).label("pool", name).create(t).Name
	ns := ownNamespace(t)
	newPod(ns, "pinned").label("app", app).nodeSelector(corev1.LabelHostname, small).req(corev1.ResourceCPU, "1").create(t)
	newPod(ns, "free").label("app", app).req(corev1.ResourceCPU, "1").create(t)
	newPod(ns, "held").label("app", app).label("hold", "yes").req(corev1.ResourceCPU, "500m").create(t)
	newPod(ns, "too-big").label("app", app).req(corev1.ResourceCPU, "20").create(t)
	newPod(ns, "other").label("app", "not-"+app).req(corev1.ResourceCPU, "1").create(t)
	pods := []string{"pinned", "free", "held", "too-big", "other"}
	before := map[string]string{}
	eventually(t, 10*time.Second, "every pod told that no policy takes it", func() (bool, error) {
		for _, p := range pods {
			pod := getPod(t, ns, p)
			c := podCondition(pod, bindgatev1alpha1.PodConditionPolicyMatched)
			if c == nil || c.Reason != bindgatev1alpha1.ReasonNoPolicy {
				return false, nil
			}
			before[p] = pod.ResourceVersion
		}
		return true, nil
	})

	var out, errOut bytes.Buffer
	if code := cmd.Run(ctx, []string{"bindgate", "simulate", "-f", file, "-o", "json", "--kubeconfig", env.Kubeconfig,
		"--operator-namespace", operatorNamespace}, &out, &errOut); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errOut.String())
	}
	var sim explain.Simulation
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sim); err != nil {
		t.Fatalf("decoding the JSON output: %v\n%s", err, out.String())
	}
	type outcome struct{ Outcome, Node, Reason string }
	got := map[string]outcome{}
	for _, o := range sim.Pods {
		if o.Namespace == ns {
			got[o.Name] = outcome{o.Outcome, o.Node, o.Reason}
		}
	}
	want := map[string]outcome{
		"pinned":  {explain.OutcomeBind, small, ""},
		"free":    {explain.OutcomeBind, big, ""},
		"held":    {explain.OutcomeWait, big, "hold: expression is false"},
		"too-big": {explain.OutcomeUnschedulable, "", "0/2 nodes are available: 2 Insufficient cpu."},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("simulated outcomes (-want +got):\n%s", diff)
	}

	// Nothing was written: no policy, no pod changed.
	if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, &bindgatev1alpha1.BindingPolicy{}); !apierrors.IsNotFound(err) {
		t.Errorf("after simulate, Get BindingPolicy %s: %v, want NotFound", name, err)
	}
	for _, p := range pods {
		if rv := getPod(t, ns, p).ResourceVersion; rv != before[p] {
			t.Errorf("simulate changed pod %s (resourceVersion %s -> %s)", p, before[p], rv)
		}
	}

	// Applied, the policy does what the simulation said.
	pol := &bindgatev1alpha1.BindingPolicy{}
	if err := yaml.Unmarshal([]byte(manifest), pol); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pol) })
	applied := map[string]outcome{}
	eventually(t, 20*time.Second, "the applied policy settles", func() (bool, error) {
		applied = map[string]outcome{}
		for _, p := range []string{"pinned", "free"} {
			if n := getPod(t, ns, p).Spec.NodeName; n != "" {
				applied[p] = outcome{explain.OutcomeBind, n, ""}
			}
		}
		held := getPod(t, ns, "held")
		if c := podCondition(held, bindgatev1alpha1.PodConditionPermitted); c != nil && c.Reason == bindgatev1alpha1.ReasonWaiting {
			for _, r := range getPolicy(t, name).Status.Reservations {
				if r.PodUID == held.UID {
					applied["held"] = outcome{explain.OutcomeWait, r.Node, c.Message}
				}
			}
		}
		if c := podCondition(getPod(t, ns, "too-big"), corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
			applied["too-big"] = outcome{explain.OutcomeUnschedulable, "", c.Message}
		}
		return len(applied) == 4, nil
	})
	if diff := cmp.Diff(want, applied); diff != "" {
		t.Errorf("the applied policy's outcomes differ from the simulation (-simulated +applied):\n%s", diff)
	}
	if p := getPod(t, ns, "other"); p.Spec.NodeName != "" {
		t.Errorf("a pod the policy does not select was bound to %s", p.Spec.NodeName)
	}
}

// TestSimulateCompetingPodsAndPodManifest: two pods that compete for the
// last of a policy's capacity, and a pod given as a manifest instead of the
// pending pods.
func TestSimulateCompetingPodsAndPodManifest(t *testing.T) {
	startManager(t, 2)
	name := uniq("simulated-cap")
	app := uniq("sim-cap-app")
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(`apiVersion: scheduling.bindgate.dev/v1alpha1
kind: BindingPolicy
metadata: {name: `+name+`}
spec:
  podSelector: {matchLabels: {app: `+app+`}}
  nodeSelector: {matchLabels: {pool: `+name+`}}
  capacity: {cpu: 1}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	newNode(uniq(name+"-node")).label("pool", name).create(t)
	ns := ownNamespace(t)
	newPod(ns, "a").label("app", app).req(corev1.ResourceCPU, "1").create(t)
	newPod(ns, "b").label("app", app).req(corev1.ResourceCPU, "1").create(t)

	simulate := func(args ...string) explain.Simulation {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append([]string{"bindgate", "simulate", "-f", policyFile, "-o", "json", "--kubeconfig", env.Kubeconfig, "-n", ns}, args...)
		if code := cmd.Run(context.Background(), args, &out, &errOut); code != 0 {
			t.Fatalf("simulate: exit %d: %s", code, errOut.String())
		}
		var sim explain.Simulation
		if err := json.Unmarshal(out.Bytes(), &sim); err != nil {
			t.Fatal(err)
		}
		return sim
	}
	sim := simulate()
	if len(sim.Pods) != 2 {
		t.Fatalf("simulated %d pods, want 2: %+v", len(sim.Pods), sim.Pods)
	}
	first, second := sim.Pods[0], sim.Pods[1]
	if first.Outcome != explain.OutcomeBind || second.Outcome != explain.OutcomeUnschedulable || !second.DependsOnOrder ||
		second.Reason != "0/1 nodes are available: 1 policy "+name+" capacity exhausted for cpu: 1/1 used." {
		t.Errorf("outcomes = %+v, %+v; want Bind, then Unschedulable (capacity, depends on the order)", first, second)
	}
	if diff := cmp.Diff(map[string]int{explain.OutcomeBind: 1, explain.OutcomeUnschedulable: 1}, sim.Summary); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}

	podFile := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(podFile, []byte(`apiVersion: v1
kind: Pod
metadata: {name: from-file, labels: {app: `+app+`}}
spec:
  schedulingGates: [{name: scheduling.bindgate.dev/gate}]
  containers: [{name: c, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 500m}}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	sim = simulate("--pod", podFile)
	if len(sim.Pods) != 1 || sim.Pods[0].Namespace != ns || sim.Pods[0].Name != "from-file" || sim.Pods[0].Outcome != explain.OutcomeBind {
		t.Errorf("simulating the pod manifest: %+v, want from-file in %s bound", sim.Pods, ns)
	}
}
