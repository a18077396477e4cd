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
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

func TestHelmLint(t *testing.T) {
	for _, set := range []string{
		"",
		"webhook.certManager.enabled=true,metrics.serviceMonitor.enabled=true,podDisruptionBudget.enabled=true",
		"webhook.enabled=false",
	} {
		args := []string{"lint", "--strict", chartDir}
		if set != "" {
			args = append(args, "--set", set)
		}
		out := mustRun(t, "helm", args...)
		if strings.Contains(out, "[WARNING]") || strings.Contains(out, "[ERROR]") || !strings.Contains(out, "0 chart(s) failed") {
			t.Errorf("helm lint --set %q:\n%s", set, out)
		}
	}
}

func TestHelmTemplateRejectsInvalidValues(t *testing.T) {
	for _, set := range []string{"replicaCount=-1", "webhook.failurePolicy=Sometimes", "webhook.mode=schedulerName", "webhook.timeoutSeconds=31", "replicaCunt=2", "apiPriority.matchingPrecedence=0", "apiPriority.priorityLevel=Workload_High"} {
		r := run(t, "helm", "template", releaseName, chartDir, "--set", set)
		if r.err == nil {
			t.Errorf("helm template --set %s succeeded, want a schema error", set)
			continue
		}
		if !strings.Contains(r.stderr, "values don't meet the specifications of the schema") && !strings.Contains(r.stderr, "schema") {
			t.Errorf("helm template --set %s: want a schema error, got:\n%s", set, r.stderr)
		}
	}
}

func render(t *testing.T, set ...string) []object {
	t.Helper()
	args := []string{"template", releaseName, chartDir, "--namespace", releaseNS}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return splitManifests(t, mustRun(t, "helm", args...))
}

func TestHelmTemplate(t *testing.T) {
	objs := render(t)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.Kind)
	}
	for _, want := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service", "MutatingWebhookConfiguration", "Secret", "FlowSchema", "PodDisruptionBudget", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("default render has no %s (kinds: %v)", want, kinds)
		}
	}
	for _, absent := range []string{"ServiceMonitor", "Certificate", "Issuer"} {
		if slices.Contains(kinds, absent) {
			t.Errorf("default render has a %s; it is opt-in", absent)
		}
	}

	t.Run("deployment", func(t *testing.T) { checkDeployment(t, one[appsv1.Deployment](t, objs, "Deployment"), 2) })
	t.Run("fails closed, survives a drain", func(t *testing.T) {
		for _, wh := range one[admissionregistrationv1.MutatingWebhookConfiguration](t, objs, "MutatingWebhookConfiguration").Webhooks {
			if *wh.FailurePolicy != admissionregistrationv1.Fail {
				t.Errorf("%s: failurePolicy %s, want Fail by default", wh.Name, *wh.FailurePolicy)
			}
			ex := wh.NamespaceSelector.MatchExpressions
			if len(ex) != 1 || ex[0].Key != corev1.LabelMetadataName || ex[0].Operator != "NotIn" ||
				!reflect.DeepEqual(ex[0].Values, []string{"kube-system", "kube-public", "kube-node-lease", releaseNS}) {
				t.Errorf("%s: namespaceSelector %+v does not exclude the system namespaces and %s", wh.Name, wh.NamespaceSelector, releaseNS)
			}
		}
		pdb := one[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget")
		if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.MaxUnavailable != nil {
			t.Errorf("PodDisruptionBudget %+v, want minAvailable 1", pdb.Spec)
		}
		dep := one[appsv1.Deployment](t, objs, "Deployment")
		if !reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, dep.Spec.Selector.MatchLabels) {
			t.Errorf("PodDisruptionBudget selects %v, the Deployment's pods are %v", pdb.Spec.Selector.MatchLabels, dep.Spec.Selector.MatchLabels)
		}
		tsc := dep.Spec.Template.Spec.TopologySpreadConstraints
		if len(tsc) != 1 || tsc[0].TopologyKey != corev1.LabelHostname || tsc[0].MaxSkew != 1 ||
			!reflect.DeepEqual(tsc[0].LabelSelector.MatchLabels, dep.Spec.Selector.MatchLabels) {
			t.Errorf("topologySpreadConstraints %+v, want the replicas spread over nodes", tsc)
		}
	})
	t.Run("GOMEMLIMIT follows the memory limit", func(t *testing.T) {
		memLimit := func(objs []object) *corev1.EnvVar {
			for _, e := range one[appsv1.Deployment](t, objs, "Deployment").Spec.Template.Spec.Containers[0].Env {
				if e.Name == "GOMEMLIMIT" {
					return &e
				}
			}
			return nil
		}
		if e := memLimit(objs); e == nil || e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil || e.ValueFrom.ResourceFieldRef.Resource != "limits.memory" {
			t.Errorf("GOMEMLIMIT %+v, want it from resourceFieldRef limits.memory", e)
		}
		if e := memLimit(render(t, "resources.limits.memory=null")); e != nil {
			t.Errorf("GOMEMLIMIT %+v without a memory limit, want none", e)
		}
	})
	t.Run("rbac has no wildcards", func(t *testing.T) { checkNoWildcards(t, objs) })
	t.Run("manager rules are the generated ones", func(t *testing.T) {
		want := generatedRules(t)
		for _, cr := range find[rbacv1.ClusterRole](t, objs, "ClusterRole") {
			if cr.Name == "bindgate-manager-role" {
				if !reflect.DeepEqual(cr.Rules, want) {
					t.Fatalf("chart ClusterRole rules differ from config/rbac/role.yaml:\n got %+v\nwant %+v", cr.Rules, want)
				}
				return
			}
		}
		t.Fatal("no ClusterRole bindgate-manager-role")
	})
	t.Run("secrets only in the release namespace", func(t *testing.T) {
		for _, cr := range find[rbacv1.ClusterRole](t, objs, "ClusterRole") {
			for _, r := range cr.Rules {
				if slices.Contains(r.Resources, "secrets") {
					t.Errorf("ClusterRole %s grants %v on secrets cluster-wide", cr.Name, r.Verbs)
				}
			}
		}
		role := one[rbacv1.Role](t, objs, "Role")
		if role.Namespace != releaseNS {
			t.Errorf("Role in %q, want %q", role.Namespace, releaseNS)
		}
		// Exactly what the code uses: GET, the seal key's update, and list
		// and watch only for the self-signed certificate rotator's cache.
		secretRules := func(objs []object) []string {
			var out []string
			for _, r := range one[rbacv1.Role](t, objs, "Role").Rules {
				if slices.Contains(r.Resources, "secrets") {
					out = append(out, strings.Join(r.Verbs, ",")+" "+strings.Join(r.ResourceNames, ","))
				}
			}
			return out
		}
		for set, want := range map[string][]string{
			"":                      {"get ", "update bindgate-seal-key", "list,watch ", "update bindgate-webhook-server-cert"},
			"webhook.enabled=false": {"get ", "update bindgate-seal-key"},
		} {
			var objs []object
			if set == "" {
				objs = render(t)
			} else {
				objs = render(t, set)
			}
			if got := secretRules(objs); !reflect.DeepEqual(got, want) {
				t.Errorf("--set %q: Secret rules %q, want %q", set, got, want)
			}
		}
	})
	t.Run("webhook entries match the generated configuration", func(t *testing.T) {
		checkWebhookMatchesGenerated(t, one[admissionregistrationv1.MutatingWebhookConfiguration](t, objs, "MutatingWebhookConfiguration"))
	})

	t.Run("options", func(t *testing.T) {
		objs := render(t, "webhook.certManager.enabled=true", "metrics.serviceMonitor.enabled=true",
			"podDisruptionBudget.enabled=true", "webhook.failurePolicy=Fail", "replicaCount=3")
		kinds := map[string]int{}
		for _, o := range objs {
			kinds[o.Kind]++
		}
		for _, k := range []string{"Certificate", "Issuer", "ServiceMonitor", "PodDisruptionBudget"} {
			if kinds[k] != 1 {
				t.Errorf("want one %s, rendered %d", k, kinds[k])
			}
		}
		for _, o := range objs {
			if o.Kind == "Secret" && o.Name == "bindgate-webhook-server-cert" {
				t.Errorf("cert-manager owns the Secret; the chart rendered %s", o.Name)
			}
		}
		mwc := one[admissionregistrationv1.MutatingWebhookConfiguration](t, objs, "MutatingWebhookConfiguration")
		if got := mwc.Annotations["cert-manager.io/inject-ca-from"]; got != releaseNS+"/bindgate-serving-cert" {
			t.Errorf("inject-ca-from = %q", got)
		}
		for _, wh := range mwc.Webhooks {
			if *wh.FailurePolicy != admissionregistrationv1.Fail {
				t.Errorf("%s: failurePolicy %s, want Fail", wh.Name, *wh.FailurePolicy)
			}
		}
		dep := one[appsv1.Deployment](t, objs, "Deployment")
		checkDeployment(t, dep, 3)
		if !slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--webhook-cert-mode=cert-manager") {
			t.Errorf("args %v lack --webhook-cert-mode=cert-manager", dep.Spec.Template.Spec.Containers[0].Args)
		}
	})

	t.Run("outbound webhook destinations", func(t *testing.T) {
		args := one[appsv1.Deployment](t, render(t, "outboundWebhooks.allowedCIDRs={127.0.0.1/32,fd00::/8}", "outboundWebhooks.allowLinkLocal=true"), "Deployment").Spec.Template.Spec.Containers[0].Args
		for _, want := range []string{"--webhook-allowed-cidrs=127.0.0.1/32,fd00::/8", "--allow-link-local-webhooks"} {
			if !slices.Contains(args, want) {
				t.Errorf("args %v lack %s", args, want)
			}
		}
		for _, a := range one[appsv1.Deployment](t, objs, "Deployment").Spec.Template.Spec.Containers[0].Args {
			if strings.HasPrefix(a, "--webhook-allowed-cidrs") || a == "--allow-link-local-webhooks" {
				t.Errorf("default args allow more destinations: %s", a)
			}
		}
	})

	t.Run("scheduler-name mode", func(t *testing.T) {
		dep := one[appsv1.Deployment](t, render(t, "webhook.mode=scheduler-name"), "Deployment")
		if !slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--pod-webhook-mode=scheduler-name") {
			t.Errorf("args %v lack --pod-webhook-mode=scheduler-name", dep.Spec.Template.Spec.Containers[0].Args)
		}
		if !slices.Contains(one[appsv1.Deployment](t, render(t), "Deployment").Spec.Template.Spec.Containers[0].Args, "--pod-webhook-mode=gate") {
			t.Errorf("default args lack --pod-webhook-mode=gate")
		}
	})

	t.Run("api priority", func(t *testing.T) {
		fs := one[flowcontrolv1.FlowSchema](t, objs, "FlowSchema")
		if fs.Spec.PriorityLevelConfiguration.Name != "workload-high" || fs.Spec.MatchingPrecedence != 800 {
			t.Errorf("FlowSchema %s: priority level %q, precedence %d; want workload-high, 800 (kube-scheduler's)",
				fs.Name, fs.Spec.PriorityLevelConfiguration.Name, fs.Spec.MatchingPrecedence)
		}
		want := []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
			ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: chartServiceAccount, Namespace: releaseNS}}}
		if len(fs.Spec.Rules) != 1 || !reflect.DeepEqual(fs.Spec.Rules[0].Subjects, want) {
			t.Errorf("FlowSchema rules %+v, want one rule for subjects %+v", fs.Spec.Rules, want)
		}
		fs = one[flowcontrolv1.FlowSchema](t, render(t, "apiPriority.priorityLevel=workload-low", "apiPriority.matchingPrecedence=5000"), "FlowSchema")
		if fs.Spec.PriorityLevelConfiguration.Name != "workload-low" || fs.Spec.MatchingPrecedence != 5000 {
			t.Errorf("values not applied: %+v", fs.Spec)
		}
		for _, o := range render(t, "apiPriority.enabled=false") {
			if o.Kind == "FlowSchema" {
				t.Error("apiPriority.enabled=false still renders a FlowSchema")
			}
		}
	})

	t.Run("webhook disabled", func(t *testing.T) {
		objs := render(t, "webhook.enabled=false")
		for _, o := range objs {
			if o.Kind == "MutatingWebhookConfiguration" || (o.Kind == "Secret" && o.Name != "bindgate-seal-key") || o.Name == "bindgate-webhook-service" {
				t.Errorf("webhook.enabled=false still renders %s %s", o.Kind, o.Name)
			}
		}
		dep := one[appsv1.Deployment](t, objs, "Deployment")
		if !slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--webhook-cert-mode=none") {
			t.Errorf("args %v lack --webhook-cert-mode=none", dep.Spec.Template.Spec.Containers[0].Args)
		}
		if len(dep.Spec.Template.Spec.Volumes) != 0 {
			t.Errorf("volumes %v without a webhook", dep.Spec.Template.Spec.Volumes)
		}
	})
}

func checkDeployment(t *testing.T, dep *appsv1.Deployment, replicas int32) {
	t.Helper()
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != replicas {
		t.Errorf("replicas = %v, want %d", dep.Spec.Replicas, replicas)
	}
	pod := dep.Spec.Template.Spec
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v is not restricted", psc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v is not restricted", sc)
	}
	if !slices.Contains(c.Args, "--leader-elect=true") {
		t.Errorf("args %v lack --leader-elect=true", c.Args)
	}
	for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "health" {
			t.Errorf("probe %s: %+v", path, probe)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["health"] != 8081 || ports["metrics"] != 8080 {
		t.Errorf("ports %v, want health 8081 and metrics 8080", ports)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v: want requests and limits", c.Resources)
	}
}

func checkNoWildcards(t *testing.T, objs []object) {
	t.Helper()
	var rules []rbacv1.PolicyRule
	for _, cr := range find[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		rules = append(rules, cr.Rules...)
	}
	for _, r := range find[rbacv1.Role](t, objs, "Role") {
		rules = append(rules, r.Rules...)
	}
	if len(rules) == 0 {
		t.Fatal("no RBAC rules rendered")
	}
	for _, r := range rules {
		for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames, r.NonResourceURLs} {
			for _, v := range list {
				if strings.Contains(v, "*") {
					t.Errorf("wildcard %q in rule %+v", v, r)
				}
			}
		}
	}
}

// generatedRules are the rules of config/rbac/role.yaml (make manifests).
func generatedRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	raw, err := os.ReadFile(repoPath("config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(bytes.TrimPrefix(raw, []byte("---\n")), role); err != nil {
		t.Fatal(err)
	}
	return role.Rules
}

// TestChartRBACInSync fails when the chart's copy of the generated rules is
// stale: run `cp` as the message says after `make manifests`.
func TestChartRBACInSync(t *testing.T) {
	raw, err := os.ReadFile(repoPath(chartDir, "files", "role-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var got []rbacv1.PolicyRule
	if err := yaml.UnmarshalStrict(raw, &got); err != nil {
		t.Fatal(err)
	}
	if want := generatedRules(t); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s/files/role-rules.yaml differs from config/rbac/role.yaml's rules; copy them again "+
			"(the rules: list of role.yaml, keeping the header comment):\n got %+v\nwant %+v", chartDir, got, want)
	}
}

// TestChartCRDsInSync fails when the chart's crds/ differ from config/crd/bases.
func TestChartCRDsInSync(t *testing.T) {
	bases, err := filepath.Glob(repoPath("config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	chart, err := filepath.Glob(repoPath(chartDir, "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	names := func(paths []string) []string {
		var n []string
		for _, p := range paths {
			n = append(n, filepath.Base(p))
		}
		return n
	}
	if !slices.Equal(names(bases), names(chart)) {
		t.Fatalf("chart crds/ holds %v, config/crd/bases holds %v: run 'cp config/crd/bases/*.yaml %s/crds/'", names(chart), names(bases), chartDir)
	}
	for i := range bases {
		a, err := os.ReadFile(bases[i])
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(chart[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from config/crd/bases: run 'cp config/crd/bases/*.yaml %s/crds/'", chart[i], chartDir)
		}
	}
}

// checkWebhookMatchesGenerated compares the chart's webhook entries with
// config/webhook/manifests.yaml, generated from the podgate markers.
func checkWebhookMatchesGenerated(t *testing.T, got *admissionregistrationv1.MutatingWebhookConfiguration) {
	t.Helper()
	raw, err := os.ReadFile(repoPath("config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := yaml.UnmarshalStrict(bytes.TrimPrefix(raw, []byte("---\n")), want); err != nil {
		t.Fatal(err)
	}
	if len(got.Webhooks) != len(want.Webhooks) {
		t.Fatalf("chart has %d webhooks, generated %d", len(got.Webhooks), len(want.Webhooks))
	}
	for i, w := range want.Webhooks {
		g := got.Webhooks[i]
		if g.Name != w.Name || *g.ClientConfig.Service.Path != *w.ClientConfig.Service.Path ||
			*g.FailurePolicy != *w.FailurePolicy || *g.SideEffects != *w.SideEffects ||
			*g.TimeoutSeconds != *w.TimeoutSeconds ||
			!reflect.DeepEqual(g.NamespaceSelector, w.NamespaceSelector) ||
			!reflect.DeepEqual(g.ObjectSelector, w.ObjectSelector) ||
			!reflect.DeepEqual(g.AdmissionReviewVersions, w.AdmissionReviewVersions) ||
			len(g.Rules) != 1 || !reflect.DeepEqual(g.Rules[0].Operations, w.Rules[0].Operations) ||
			!reflect.DeepEqual(g.Rules[0].Resources, w.Rules[0].Resources) {
			t.Errorf("webhook %d differs:\nchart     %+v\ngenerated %+v", i, g, w)
		}
	}
	// The selectors name the API's labels.
	if got.Webhooks[0].NamespaceSelector.MatchLabels[bindgatev1alpha1.EnabledNamespaceLabel] != "true" ||
		got.Webhooks[1].ObjectSelector.MatchExpressions[0].Key != bindgatev1alpha1.PolicyLabel {
		t.Errorf("selectors do not use EnabledNamespaceLabel / PolicyLabel: %+v", got.Webhooks)
	}
}

// TestKustomizeDefault builds config/default and checks it like the chart.
func TestKustomizeDefault(t *testing.T) {
	objs := splitManifests(t, mustRun(t, "kubectl", "kustomize", "config/default"))
	names := map[string]string{}
	for _, o := range objs {
		names[o.Kind+"/"+o.Name] = o.Kind
	}
	for _, want := range []string{
		"Namespace/bindgate-system", "ServiceAccount/bindgate-controller-manager",
		"ClusterRole/bindgate-manager-role", "ClusterRoleBinding/bindgate-manager-rolebinding",
		"Role/bindgate-leader-election-role", "Deployment/bindgate-controller-manager",
		"Service/bindgate-webhook-service", "Service/bindgate-metrics-service",
		"Secret/bindgate-webhook-server-cert", "Secret/bindgate-seal-key",
		"PodDisruptionBudget/bindgate-controller-manager",
		"ValidatingAdmissionPolicy/bindgate-bookkeeping", "ValidatingAdmissionPolicyBinding/bindgate-bookkeeping",
		"MutatingWebhookConfiguration/bindgate-mutating-webhook-configuration",
		"CustomResourceDefinition/bindingpolicies.scheduling.bindgate.dev",
	} {
		if _, ok := names[want]; !ok {
			t.Errorf("kustomize build lacks %s", want)
		}
	}
	checkDeployment(t, one[appsv1.Deployment](t, objs, "Deployment"), 2)
	checkNoWildcards(t, objs)
	// kustomize does not rewrite FlowSchema subjects: they must name the
	// ServiceAccount as rendered.
	fs := one[flowcontrolv1.FlowSchema](t, objs, "FlowSchema")
	wantSubjects := []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
		ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: "bindgate-controller-manager", Namespace: releaseNS}}}
	if fs.Name != "bindgate-controller-manager" || fs.Spec.PriorityLevelConfiguration.Name != "workload-high" ||
		len(fs.Spec.Rules) != 1 || !reflect.DeepEqual(fs.Spec.Rules[0].Subjects, wantSubjects) {
		t.Errorf("FlowSchema %s: %+v; want workload-high for subjects %+v", fs.Name, fs.Spec, wantSubjects)
	}
	mwc := one[admissionregistrationv1.MutatingWebhookConfiguration](t, objs, "MutatingWebhookConfiguration")
	checkWebhookMatchesGenerated(t, mwc)
	for _, wh := range mwc.Webhooks {
		if s := wh.ClientConfig.Service; s.Name != "bindgate-webhook-service" || s.Namespace != releaseNS {
			t.Errorf("%s calls %s/%s", wh.Name, s.Namespace, s.Name)
		}
	}
	for _, cr := range find[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		if cr.Name == "bindgate-manager-role" && !reflect.DeepEqual(cr.Rules, generatedRules(t)) {
			t.Errorf("kustomize manager rules differ from role.yaml")
		}
	}
	checkBookkeepingPolicy(t, objs, "bindgate-bookkeeping", "system:serviceaccount:"+releaseNS+":bindgate-controller-manager")
}

// TestBookkeepingPolicyInSync: the chart's ValidatingAdmissionPolicy is
// config/admission's, with the release's operator username and names.
func TestBookkeepingPolicyInSync(t *testing.T) {
	chart := render(t)
	checkBookkeepingPolicy(t, chart, "bindgate-bookkeeping", "system:serviceaccount:"+releaseNS+":bindgate-controller-manager")
	kust := splitManifests(t, mustRun(t, "kubectl", "kustomize", "config/default"))
	c := one[admissionregistrationv1.ValidatingAdmissionPolicy](t, chart, "ValidatingAdmissionPolicy")
	k := one[admissionregistrationv1.ValidatingAdmissionPolicy](t, kust, "ValidatingAdmissionPolicy")
	if !reflect.DeepEqual(c.Spec, k.Spec) {
		t.Errorf("chart and config/admission policies differ:\nchart     %+v\nkustomize %+v", c.Spec, k.Spec)
	}
	other := render(t, "fullnameOverride=gatekeeper")
	checkBookkeepingPolicy(t, other, "gatekeeper-bookkeeping", "system:serviceaccount:"+releaseNS+":gatekeeper-controller-manager")
}

// checkBookkeepingPolicy: one policy, failing closed, that lets only the
// operator's ServiceAccount through, bound with Deny.
func checkBookkeepingPolicy(t *testing.T, objs []object, name, operator string) {
	t.Helper()
	vap := one[admissionregistrationv1.ValidatingAdmissionPolicy](t, objs, "ValidatingAdmissionPolicy")
	b := one[admissionregistrationv1.ValidatingAdmissionPolicyBinding](t, objs, "ValidatingAdmissionPolicyBinding")
	if vap.Name != name || b.Spec.PolicyName != name {
		t.Errorf("policy %q, binding names %q; want %q", vap.Name, b.Spec.PolicyName, name)
	}
	if vap.Spec.FailurePolicy == nil || *vap.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("policy failurePolicy %v, want Fail", vap.Spec.FailurePolicy)
	}
	want := "request.userInfo.username != '" + operator + "'"
	if len(vap.Spec.MatchConditions) != 1 || vap.Spec.MatchConditions[0].Expression != want {
		t.Errorf("matchConditions %+v, want the one expression %s", vap.Spec.MatchConditions, want)
	}
	if !reflect.DeepEqual(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("binding validationActions %v, want [Deny]", b.Spec.ValidationActions)
	}
}
