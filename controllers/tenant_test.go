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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/controllers"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/postbind"
	"github.com/bindgate/bindgate/internal/testenv"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// operatorUser is the operator's ServiceAccount as config/default installs
// it: the identity config/admission/bookkeeping.yaml lets through.
const operatorUser = "system:serviceaccount:bindgate-system:bindgate-controller-manager"

// vapLabel marks the namespaces a test's copy of the bookkeeping policy
// applies to (so it does not reach other tests' pods).
const vapLabel = "bindgate-test/bookkeeping"

// installBookkeepingPolicy installs config/admission/bookkeeping.yaml as
// shipped, its binding limited to namespaces labelled vapLabel=scope, and
// waits until the API server enforces it.
func installBookkeepingPolicy(t *testing.T, scope, probeNS string, probe client.Client) {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "admission", "bookkeeping.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("config/admission/bookkeeping.yaml: %d documents, want the policy and its binding", len(docs))
	}
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := yaml.UnmarshalStrict([]byte(docs[0]), vap); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), binding); err != nil {
		t.Fatal(err)
	}
	vap.Name = uniq("bookkeeping")
	binding.Name = vap.Name
	binding.Spec.PolicyName = vap.Name
	binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{vapLabel: scope}},
	}
	for _, o := range []client.Object{vap, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	eventually(t, 30*time.Second, "the bookkeeping policy enforced", func() (bool, error) {
		p := newPod(probeNS, uniq("probe")).p
		p.Annotations = map[string]string{bindgatev1alpha1.PolicyAnnotation: "x"}
		err := probe.Create(ctx, p)
		if err == nil {
			_ = env.Client.Delete(ctx, p)
			return false, nil
		}
		return strings.Contains(err.Error(), "may be set or changed only by the bindgate operator"), nil
	})
}

// tenantClient is a user bound to the edit ClusterRole in ns only, as a
// team's members are.
func tenantClient(t *testing.T, ns string) client.Client {
	t.Helper()
	aggregateEdit(t)
	user := uniq("tenant")
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := env.Client.Create(context.Background(), rb); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// RBAC caches refresh at once, but wait for the binding to count.
	eventually(t, 10*time.Second, "the tenant's RoleBinding in effect", func() (bool, error) {
		var pods corev1.PodList
		err := c.List(context.Background(), &pods, client.InNamespace(ns))
		if err != nil {
			t.Logf("tenant list: %v", err)
		}
		return err == nil, nil
	})
	return c
}

// aggregateEdit fills the edit ClusterRole (and the aggregated roles it
// takes in, such as view) from the roles labelled to aggregate to them, as
// kube-controller-manager's clusterrole-aggregation controller does in a
// cluster: envtest runs no controller manager, so the API server's
// bootstrap aggregated roles are empty.
func aggregateEdit(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var all rbacv1.ClusterRoleList
	if err := env.Client.List(ctx, &all); err != nil {
		t.Fatal(err)
	}
	byName := map[string]*rbacv1.ClusterRole{}
	for i := range all.Items {
		byName[all.Items[i].Name] = &all.Items[i]
	}
	var rulesOf func(r *rbacv1.ClusterRole, seen map[string]bool) []rbacv1.PolicyRule
	rulesOf = func(r *rbacv1.ClusterRole, seen map[string]bool) []rbacv1.PolicyRule {
		if seen[r.Name] {
			return nil
		}
		seen[r.Name] = true
		if r.AggregationRule == nil {
			return r.Rules
		}
		var out []rbacv1.PolicyRule
		for _, sel := range r.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range all.Items {
				if s.Matches(labels.Set(c.Labels)) {
					out = append(out, rulesOf(byName[c.Name], seen)...)
				}
			}
		}
		return out
	}
	edit, ok := byName["edit"]
	if !ok || edit.AggregationRule == nil {
		t.Fatal("no aggregated edit ClusterRole")
	}
	edit.Rules = rulesOf(edit, map[string]bool{})
	if err := env.Client.Update(ctx, edit); err != nil {
		t.Fatal(err)
	}
}

// TestTenantCannotSteerStarveOrSpoof: a tenant (edit in one namespace) can
// neither steer a pod into another team's policy, nor write bindgate's
// bookkeeping (refused at admission), while the operator's own writes under
// the same admission policy go through; and bookkeeping written where the
// admission policy does not reach charges no capacity and sends no notice.
func TestTenantCannotSteerStarveOrSpoof(t *testing.T) {
	ctx := context.Background()
	w := newHookEnv(t)
	rec := newReceiver(t, nil)
	scope := uniq("scope")
	teamA, teamB := uniq("team-a"), uniq("team-b")
	nsA := namespace(t, map[string]string{"team": teamA, vapLabel: scope})
	nsB := namespace(t, map[string]string{"team": teamB, vapLabel: scope})
	// Outside the admission policy's reach: as if it were not installed.
	nsOpen := namespace(t, map[string]string{"team": uniq("team-c")})
	tenant := tenantClient(t, nsA)
	installBookkeepingPolicy(t, scope, nsA, tenant)

	pool(t, teamA, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": teamA}}
	})
	pool(t, teamB, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": teamB}}
		p.Spec.Capacity = map[corev1.ResourceName]bindgatev1alpha1.CapacityQuantity{corev1.ResourceCPU: {Quantity: resource.MustParse("2")}}
		p.Spec.PostBind = []bindgatev1alpha1.PostBindWebhook{rec.hook("audit", 3)}
	})
	newNode(uniq(teamA)).label("pool", teamA).create(t)
	nodeB := newNode(uniq(teamB)).label("pool", teamB).alloc(corev1.ResourceCPU, "16").create(t)
	startManagerAs(t, operatorUser, w.opts.Workers, func(o *controllers.Options) { *o = w.opts })

	// 1. Steering: the label names team B's policy; team A's pod stays gated.
	steered := newPod(nsA, "steered").policy(teamB).req(corev1.ResourceCPU, "100m").p
	if err := tenant.Create(ctx, steered); err != nil {
		t.Fatalf("tenant creating a gated pod: %v", err)
	}
	eventually(t, 20*time.Second, "steered pod refused with PolicyDoesNotSelectPod", func() (bool, error) {
		for _, c := range getPod(t, nsA, "steered").Status.Conditions {
			if c.Type == bindgatev1alpha1.PodConditionPolicyMatched && c.Reason == bindgatev1alpha1.ReasonPolicyDoesNotSelect {
				return true, nil
			}
		}
		return false, nil
	})

	// 2. The tenant's own pod is bound by the operator under team A's
	// policy: the operator's ungate (sealed annotations, pin) and binding
	// pass the admission policy.
	own := newPod(nsA, "own").req(corev1.ResourceCPU, "100m").p
	if err := tenant.Create(ctx, own); err != nil {
		t.Fatalf("tenant creating a gated pod: %v", err)
	}
	eventually(t, 20*time.Second, "the tenant's own pod bound", func() (bool, error) {
		return getPod(t, nsA, "own").Spec.NodeName != "", nil
	})
	if p, ok := bind.BoundBy(getPod(t, nsA, "own")); !ok || p != teamA {
		t.Errorf("own pod: BoundBy = %q, %v; want %q", p, ok, teamA)
	}

	// 3. Bookkeeping written by the tenant is refused at admission, naming
	// the field.
	forged := map[string]map[string]string{
		"policy":           {bindgatev1alpha1.PolicyAnnotation: teamB},
		"seal":             {bindgatev1alpha1.SealAnnotation: "AAAA"},
		"postbind pending": {bindgatev1alpha1.PostBindPendingAnnotation: "audit"},
		"postbind result":  {postbind.ResultAnnotation("audit"): postbind.ResultDelivered},
	}
	for what, ann := range forged {
		p := newPod(nsA, uniq("forged")).req(corev1.ResourceCPU, "100m").p
		p.Annotations = ann
		err := tenant.Create(ctx, p)
		if err == nil || !strings.Contains(err.Error(), "metadata.annotations: ") || !strings.Contains(err.Error(), "only by the bindgate operator") {
			t.Errorf("tenant creating a pod with the %s annotation: %v, want refused naming metadata.annotations", what, err)
		}
		bound := newPod(nsA, uniq("forged-bound")).req(corev1.ResourceCPU, "100m").p
		bound.Spec.SchedulingGates = nil
		bound.Spec.NodeName = nodeB.Name
		bound.Annotations = ann
		if err := tenant.Create(ctx, bound); err == nil {
			t.Errorf("tenant creating a bound pod with the %s annotation: admitted", what)
		}
	}
	change := func(name string, mutate func(*corev1.Pod)) error {
		p := &corev1.Pod{}
		if err := tenant.Get(ctx, client.ObjectKey{Namespace: nsA, Name: name}, p); err != nil {
			return err
		}
		mutate(p)
		return tenant.Update(ctx, p)
	}
	if err := change("own", func(p *corev1.Pod) { p.Annotations[bindgatev1alpha1.PolicyAnnotation] = teamB }); err == nil {
		t.Error("tenant changing the policy annotation of a bound pod: admitted")
	}
	if err := change("own", func(p *corev1.Pod) { delete(p.Annotations, bindgatev1alpha1.SealAnnotation) }); err == nil ||
		!strings.Contains(err.Error(), "may be removed only by the bindgate operator") {
		t.Errorf("tenant removing the seal: %v, want refused", err)
	}
	if err := change("own", func(p *corev1.Pod) { p.Annotations["team.example.com/owner"] = "a" }); err != nil {
		t.Errorf("tenant adding an annotation of its own: %v", err)
	}
	if err := change("steered", func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: nodeB.Name}
	}); err == nil || !strings.Contains(err.Error(), "spec.nodeSelector[kubernetes.io/hostname]") {
		t.Errorf("tenant pinning a gated pod: %v, want refused naming the field", err)
	}

	// 4. Where no admission policy stops it, bookkeeping the operator did not
	// write is ignored: a bound 2-CPU pod claiming team B's policy (its
	// whole capacity) with a pending notice charges nothing and gets no
	// notice, and team B's own pod still fits.
	spoof := newPod(nsOpen, "spoof").req(corev1.ResourceCPU, "2").p
	spoof.Spec.SchedulingGates = nil
	spoof.Spec.NodeName = nodeB.Name
	spoof.Annotations = map[string]string{
		bindgatev1alpha1.PolicyAnnotation: teamB, bindgatev1alpha1.PostBindPendingAnnotation: "audit",
		bindgatev1alpha1.SealAnnotation: bind.Seal("not-this-pod", teamB),
	}
	if err := env.Client.Create(ctx, spoof); err != nil {
		t.Fatal(err)
	}
	legit := newPod(nsB, "legit").req(corev1.ResourceCPU, "1").create(t)
	eventually(t, 20*time.Second, "team B's pod bound within its capacity", func() (bool, error) {
		return getPod(t, nsB, "legit").Spec.NodeName != "", nil
	})
	waitResults(t, nsB, "audit", 1, 20*time.Second)
	if _, ok := rec.delivered()[webhookclient.PodBoundEventID(legit.UID, "audit")]; !ok {
		t.Error("no notice for team B's pod")
	}
	// A notice for the spoofed pod would have gone out with the other.
	consistently(t, time.Second, "no notice for a pod bindgate never bound", func() bool {
		return rec.attemptsOf(webhookclient.PodBoundEventID(spoof.UID, "audit")) == 0
	})
	if p := getPod(t, nsOpen, "spoof"); p.Annotations[bindgatev1alpha1.PostBindPendingAnnotation] != "audit" {
		t.Errorf("spoofed pod's annotations touched: %v", p.Annotations)
	}
}
