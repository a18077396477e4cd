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
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/cmd"
	"github.com/bindgate/bindgate/internal/explain"
	"github.com/bindgate/bindgate/internal/options"
)

func explainOptions(t *testing.T) explain.Options {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return explain.Options{
		Client: env.Client, Clientset: cs, OperatorNamespace: operatorNamespace,
		SealKeySecret: options.DefaultSealKeySecret, Clock: clock.RealClock{},
	}
}

func explainPod(t *testing.T, ns, name string, eo explain.ExplainOptions) (*explain.Report, string) {
	t.Helper()
	r, err := explain.Pod(context.Background(), explainOptions(t), ns, name, eo)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := r.WriteText(&out, time.Now()); err != nil {
		t.Fatal(err)
	}
	t.Logf("bindgate explain pod %s -n %s\n%s", name, ns, out.String())
	return r, out.String()
}

func with(b *podBuilder, m func(*podBuilder)) *podBuilder { m(b); return b }

// ownNamespace is a new namespace whose pods are deleted when the test ends:
// a pending pod left behind would be taken by the next test's policies.
func ownNamespace(t *testing.T) string {
	t.Helper()
	ns := namespace(t, nil)
	t.Cleanup(func() {
		_ = env.Client.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
	})
	return ns
}

// ownPods makes a policy select only the pods labelled owner=<its name>
// (pods other tests left pending must not land on its nodes).
func ownPods(p *bindgatev1alpha1.BindingPolicy) {
	p.Spec.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"owner": p.Name}}
}

func waitBound(t *testing.T, ns, name string) string {
	t.Helper()
	var node string
	eventually(t, 15*time.Second, ns+"/"+name+" bound", func() (bool, error) {
		p := getPod(t, ns, name)
		node = p.Spec.NodeName
		return node != "", nil
	})
	return node
}

func waitUnschedulable(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, 15*time.Second, ns+"/"+name+" unschedulable", func() (bool, error) {
		c := podCondition(getPod(t, ns, name), corev1.PodScheduled)
		return c != nil && c.Status == corev1.ConditionFalse, nil
	})
}

// wantReasons checks the grouped refusals: plugin, reason and nodes.
func wantReasons(t *testing.T, r *explain.Report, want []explain.ReasonCount) {
	t.Helper()
	if r.Nodes == nil {
		t.Fatalf("no node verdicts: %+v", r)
	}
	if diff := cmp.Diff(want, r.Nodes.Reasons); diff != "" {
		t.Errorf("refusal reasons (-want +got):\n%s", diff)
	}
}

func wantText(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("explain output lacks %q:\n%s", w, text)
		}
	}
}

// TestExplain runs `bindgate explain` on pods held up by each kind of
// obstacle, against the running operator: each report names the real
// reason and the nodes, as the operator's own plugins found them.
func TestExplain(t *testing.T) {
	startManager(t, 4)

	t.Run("anti-affinity", func(t *testing.T) {
		pol := uniq("explain-aa")
		pool(t, pol, ownPods)
		n1 := newNode(uniq(pol+"-node")).label("pool", pol).create(t).Name
		ns := ownNamespace(t)
		with(newPod(ns, "db-0").policy(pol).label("owner", pol).req(corev1.ResourceCPU, "100m"), antiAffinity("db", corev1.LabelHostname, true)).create(t)
		waitBound(t, ns, "db-0")
		with(newPod(ns, "db-1").policy(pol).label("owner", pol).req(corev1.ResourceCPU, "100m"), antiAffinity("db", corev1.LabelHostname, true)).create(t)
		waitUnschedulable(t, ns, "db-1")
		r, text := explainPod(t, ns, "db-1", explain.ExplainOptions{})
		wantReasons(t, r, []explain.ReasonCount{
			{Plugin: "InterPodAffinity", Reason: "node(s) didn't match pod anti-affinity rules", Count: 1, Nodes: []string{n1}},
		})
		if r.Policy != pol || r.Nodes.Feasible != 0 || r.Nodes.Total != 1 {
			t.Errorf("policy %q, %d/%d feasible; want %s, 0/1", r.Policy, r.Nodes.Feasible, r.Nodes.Total, pol)
		}
		wantText(t, text, "unschedulable: 0/1 nodes take it under BindingPolicy "+pol,
			"InterPodAffinity", "node(s) didn't match pod anti-affinity rules", n1, "Timeline:")
	})

	t.Run("capacity", func(t *testing.T) {
		pol := uniq("explain-cap")
		pool(t, pol, ownPods, func(p *bindgatev1alpha1.BindingPolicy) {
			p.Spec.Capacity = map[corev1.ResourceName]bindgatev1alpha1.CapacityQuantity{corev1.ResourceCPU: {Quantity: resource.MustParse("1")}}
		})
		a := newNode(uniq(pol+"-a")).label("pool", pol).create(t).Name
		b := newNode(uniq(pol+"-b")).label("pool", pol).create(t).Name
		ns := ownNamespace(t)
		newPod(ns, "first").policy(pol).label("owner", pol).req(corev1.ResourceCPU, "1").create(t)
		waitBound(t, ns, "first")
		newPod(ns, "second").policy(pol).label("owner", pol).req(corev1.ResourceCPU, "500m").create(t)
		waitUnschedulable(t, ns, "second")
		r, text := explainPod(t, ns, "second", explain.ExplainOptions{AllNodes: true})
		reason := "policy " + pol + " capacity exhausted for cpu: 1/1 used"
		wantReasons(t, r, []explain.ReasonCount{
			{Plugin: "BindingPolicyCapacity", Reason: reason, Count: 2, Nodes: sortedPair(a, b)},
		})
		if len(r.Nodes.Refused) != 2 {
			t.Errorf("--nodes lists %d refused nodes, want 2", len(r.Nodes.Refused))
		}
		wantText(t, text, reason, a, b, "Every refused node:")
	})

	t.Run("taint", func(t *testing.T) {
		pol := uniq("explain-taint")
		pool(t, pol, ownPods)
		other := uniq("explain-other")
		pool(t, other, func(p *bindgatev1alpha1.BindingPolicy) {
			p.Spec.Priority = 900
			p.Spec.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gpu"}}
		})
		tainted := newNode(uniq(pol+"-gpu")).label("pool", pol).taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).create(t).Name
		free := newNode(uniq(pol+"-free")).label("pool", pol).alloc(corev1.ResourceCPU, "1").create(t).Name
		ns := ownNamespace(t)
		newPod(ns, "web").policy(pol).label("owner", pol).req(corev1.ResourceCPU, "2").create(t)
		waitUnschedulable(t, ns, "web")
		r, text := explainPod(t, ns, "web", explain.ExplainOptions{})
		wantReasons(t, r, []explain.ReasonCount{
			{Plugin: "NodeResourcesFit", Reason: "Insufficient cpu", Count: 1, Nodes: []string{free}},
			{Plugin: "TaintToleration", Reason: "node(s) had untolerated taint(s)", Count: 1, Nodes: []string{tainted}},
		})
		want := []explain.PolicyVerdict{
			{Name: pol, Priority: 0, Takes: true, Reason: "named by the pod's label scheduling.bindgate.dev/policy, and it selects the pod"},
			{Name: other, Priority: 900, Reason: "its podSelector does not select the pod's labels"},
		}
		if diff := cmp.Diff(want, r.Policies); diff != "" {
			t.Errorf("policy verdicts (-want +got):\n%s", diff)
		}
		wantText(t, text, "TaintToleration", tainted, "its podSelector does not select the pod's labels")
	})

	t.Run("pending permit condition", func(t *testing.T) {
		pol := uniq("explain-permit")
		pool(t, pol, ownPods, withPermit(approvedExpr, 10*time.Minute, bindgatev1alpha1.PermitTimeoutReject))
		n1 := newNode(uniq(pol+"-node")).label("pool", pol).create(t).Name
		ns := ownNamespace(t)
		newPod(ns, "job").policy(pol).label("owner", pol).req(corev1.ResourceCPU, "100m").create(t)
		eventually(t, 15*time.Second, "pod waiting in Permit", func() (bool, error) {
			c := podCondition(getPod(t, ns, "job"), bindgatev1alpha1.PodConditionPermitted)
			return c != nil && c.Reason == bindgatev1alpha1.ReasonWaiting, nil
		})
		r, text := explainPod(t, ns, "job", explain.ExplainOptions{})
		if r.Reservation == nil || r.Reservation.Node != n1 || !r.Reservation.Durable || r.Reservation.PermitDeadline == nil {
			t.Fatalf("reservation = %+v, want a durable one on %s with a deadline", r.Reservation, n1)
		}
		want := []explain.ConditionVerdict{{Name: "approved", Kind: "expression", Verdict: explain.VerdictWaiting, Message: "expression is false"}}
		if diff := cmp.Diff(want, r.Permit); diff != "" {
			t.Errorf("permit verdicts (-want +got):\n%s", diff)
		}
		// The node is feasible (the pod's own reservation is left out).
		if r.Nodes.Feasible != 1 || len(r.Nodes.Top) != 1 || r.Nodes.Top[0].Node != n1 {
			t.Errorf("nodes = %+v, want %s feasible", r.Nodes, n1)
		}
		wantText(t, text, "reserved on node "+n1+", waiting in Permit for approved", "durable", "permit deadline",
			"expression is false", "PermitWaiting")

		// The JSON the command prints decodes strictly into the typed
		// report and carries what the direct call computed.
		var out, errOut bytes.Buffer
		code := cmd.Run(context.Background(), []string{"bindgate", "explain", "pod", "job", "-n", ns, "-o", "json",
			"--kubeconfig", env.Kubeconfig, "--operator-namespace", operatorNamespace}, &out, &errOut)
		if code != 0 {
			t.Fatalf("explain -o json: exit %d: %s", code, errOut.String())
		}
		var got explain.Report
		dec := json.NewDecoder(&out)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("decoding the JSON output: %v\n%s", err, out.String())
		}
		if diff := cmp.Diff(r.Reservation, got.Reservation); diff != "" {
			t.Errorf("reservation from JSON (-direct +json):\n%s", diff)
		}
		if diff := cmp.Diff(r.Permit, got.Permit); diff != "" {
			t.Errorf("permit from JSON (-direct +json):\n%s", diff)
		}
		again, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		var back explain.Report
		if err := json.Unmarshal(again, &back); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(got, back); diff != "" {
			t.Errorf("JSON round trip (-first +second):\n%s", diff)
		}
	})

	// A gang member holds no reservation while its gang is short: its
	// members are reserved together. explain reports the wait the operator
	// reported on the pod instead of "not evaluated", and says the pod
	// waits for its gang rather than naming the node a cycle would pick.
	t.Run("gang short of members", func(t *testing.T) {
		pol := uniq("explain-gang")
		pool(t, pol, ownPods, withGang(3))
		newNode(uniq(pol+"-node")).label("pool", pol).create(t)
		ns := ownNamespace(t)
		newPod(ns, "m0").policy(pol).label("owner", pol).label(bindgatev1alpha1.GroupLabel, "g").
			req(corev1.ResourceCPU, "100m").create(t)
		const reported = "gang g: 1/3 members exist, none reserved"
		eventually(t, 15*time.Second, "the gang's wait reported", func() (bool, error) {
			return strings.Contains(permittedMessage(t, ns, "m0"), reported), nil
		})
		r, text := explainPod(t, ns, "m0", explain.ExplainOptions{})
		if r.Reservation != nil {
			t.Errorf("reservation = %+v, want none", r.Reservation)
		}
		want := []explain.ConditionVerdict{{Name: "gang", Kind: "gang", Verdict: explain.VerdictWaiting, Message: reported}}
		if diff := cmp.Diff(want, r.Permit); diff != "" {
			t.Errorf("permit verdicts (-want +got):\n%s", diff)
		}
		wantText(t, text, "waiting in Permit for gang, no reservation yet", reported)
	})

	t.Run("not a bindgate pod", func(t *testing.T) {
		ns := ownNamespace(t)
		plain := newPod(ns, "plain")
		plain.p.Spec.SchedulingGates = nil
		plain.create(t)
		_, err := explain.Pod(context.Background(), explainOptions(t), ns, "plain", explain.ExplainOptions{})
		if !errors.Is(err, explain.ErrNotHandled) || !strings.Contains(err.Error(), `spec.schedulerName is "default-scheduler"`) {
			t.Errorf("err = %v, want ErrNotHandled naming the scheduler", err)
		}
		var out, errOut bytes.Buffer
		code := cmd.Run(context.Background(), []string{"bindgate", "explain", "pod", "plain", "-n", ns, "--kubeconfig", env.Kubeconfig}, &out, &errOut)
		if code != 1 || !strings.Contains(errOut.String(), "pod does not use bindgate") {
			t.Errorf("exit %d, stderr %q; want 1 and the reason", code, errOut.String())
		}
	})
}

func sortedPair(a, b string) []string {
	if b < a {
		return []string{b, a}
	}
	return []string{a, b}
}
