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
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv"
)

const chartServiceAccount = "bindgate-controller-manager"

// TestOperatorAsChartServiceAccount installs the chart, then runs the
// operator binary outside the cluster authenticated as the chart's
// ServiceAccount (a TokenRequest token): it must bind gated pods end to end
// (the chart's RBAC is sufficient) while that identity cannot read Secrets
// outside the release namespace nor delete pods (it is not excessive). It
// also applies config/samples with kubectl as a user does, checks
// `kubectl get bp`, and that a second server-side apply changes nothing
// once the operator has reconciled (GitOps: no drift).
func TestOperatorAsChartServiceAccount(t *testing.T) {
	if testing.Short() {
		t.Skip("envtest suite; run without -short")
	}
	tool(t, "helm")
	operator := buildOperator(t)
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := t.Context()
	admin := env.Clientset
	kc := "--kubeconfig=" + env.Kubeconfig
	// The operator runs outside the cluster here, so nothing serves the
	// admission webhooks at their in-cluster Service: install without them.
	mustRun(t, "helm", kc, "install", releaseName, chartDir, "--namespace", releaseNS, "--create-namespace", "--wait=false",
		"--set", "webhook.enabled=false")

	// A token for the chart's ServiceAccount, and a kubeconfig with it.
	tr, err := admin.CoreV1().ServiceAccounts(releaseNS).CreateToken(ctx, chartServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	saConfig := &rest.Config{Host: env.Config.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}
	saKubeconfig := filepath.Join(t.TempDir(), "sa.kubeconfig")
	if err := clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"envtest": {Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"sa": {Token: tr.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{"sa": {Cluster: "envtest", AuthInfo: "sa"}},
		CurrentContext: "sa",
	}, saKubeconfig); err != nil {
		t.Fatal(err)
	}

	// The operator as that identity, with leader election in the release
	// namespace, as the chart runs it.
	opCtx, stopOperator := context.WithCancel(ctx)
	metricsAddr := freeLocalAddr(t)
	cmd := exec.CommandContext(opCtx, operator, "--kubeconfig="+saKubeconfig, "--leader-elect=true",
		"--leader-election-namespace="+releaseNS, "--operator-namespace="+releaseNS,
		"--metrics-bind-address="+metricsAddr, "--health-probe-bind-address=0", "--zap-log-level=info")
	logs, err := os.Create(filepath.Join(t.TempDir(), "operator.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopOperator()
		_ = cmd.Wait()
		if t.Failed() {
			out, _ := os.ReadFile(logs.Name())
			t.Logf("operator log:\n%s", tail(string(out), 60))
		}
	})

	// Nodes, a policy and gated pods, created by the admin.
	for _, name := range []string{"sa-node-1", "sa-node-2"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "sa", corev1.LabelHostname: name}}}
		created, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
		if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		created, _ = admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		created.Spec.Taints = nil
		if _, err := admin.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pol := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sa-pool"},
		Spec: bindgatev1alpha1.BindingPolicySpec{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "sa"}}}}
	if err := env.Client.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-0", "web-1", "web-2", "web-3", "web-4"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: map[string]string{bindgatev1alpha1.PolicyLabel: "sa-pool"}},
			Spec: corev1.PodSpec{
				SchedulingGates: []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}},
				Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}},
			},
		}
		if _, err := admin.CoreV1().Pods("apps").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, 90*time.Second, "the operator, as the chart's ServiceAccount, binds 5 pods", func() (bool, error) {
		pods, err := admin.CoreV1().Pods("apps").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == 5, nil
	})
	poll(t, 30*time.Second, "Scheduled events", func() (bool, error) {
		evs, err := admin.CoreV1().Events("apps").List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"})
		return err == nil && len(evs.Items) >= 5, err
	})

	// /metrics answers only tokens allowed to get it (the chart's
	// metrics-reader ClusterRole), over HTTPS.
	checkMetricsAuth(t, admin, metricsAddr, tr.Status.Token)

	// The chart's FlowSchema files the operator's requests where
	// kube-scheduler's go (workload-high), not under service-accounts.
	checkAPIPriority(t, admin, saConfig)

	// Not excessive.
	sa, err := kubernetes.NewForConfig(saConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets("apps").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	forbidden := map[string]func() error{
		"get a Secret outside the release namespace": func() error {
			_, err := sa.CoreV1().Secrets("apps").Get(ctx, "db", metav1.GetOptions{})
			return err
		},
		"list Secrets cluster-wide": func() error {
			_, err := sa.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
			return err
		},
		// (Deleting pods is granted: a stranded pod with a controller owner
		// is deleted so that its owner recreates it.)
		"delete a Secret of its own namespace": func() error {
			return sa.CoreV1().Secrets(releaseNS).Delete(ctx, "bindgate-seal-key", metav1.DeleteOptions{})
		},
		"update a Secret of its own namespace it does not own": func() error {
			s, err := admin.CoreV1().Secrets(releaseNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			_, err = sa.CoreV1().Secrets(releaseNS).Update(ctx, s, metav1.UpdateOptions{})
			return err
		},
		"delete a node": func() error {
			return sa.CoreV1().Nodes().Delete(ctx, "sa-node-1", metav1.DeleteOptions{})
		},
		"create a BindingPolicy": func() error {
			c, err := client.New(saConfig, client.Options{Scheme: testenv.Scheme()})
			if err != nil {
				return err
			}
			return c.Create(ctx, &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sneaky"}})
		},
	}
	for what, call := range forbidden {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("the chart's ServiceAccount can %s (err = %v), want Forbidden", what, err)
		}
	}
	if _, err := sa.CoreV1().Secrets(releaseNS).Get(ctx, "bindgate-seal-key", metav1.GetOptions{}); err != nil {
		t.Errorf("the chart's ServiceAccount cannot get Secrets of its own namespace: %v", err)
	}
	// Without the self-signed webhook certificate (webhook.enabled=false
	// here) nothing lists or watches Secrets.
	if _, err := sa.CoreV1().Secrets(releaseNS).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the chart's ServiceAccount can list Secrets without the certificate rotator (err = %v)", err)
	}

	// kubectl apply -f config/samples/ and kubectl get bp, as a user does.
	mustRun(t, "kubectl", kc, "apply", "-f", "config/samples/")
	samples := []string{"batch-pool", "manual-approval", "training-gangs"}
	poll(t, 30*time.Second, "samples Ready", func() (bool, error) {
		for _, name := range samples {
			p := &bindgatev1alpha1.BindingPolicy{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
				return false, err
			}
			ready := false
			for _, c := range p.Status.Conditions {
				ready = ready || (c.Type == bindgatev1alpha1.ConditionReady && c.Status == metav1.ConditionTrue && c.ObservedGeneration == p.Generation)
			}
			if !ready {
				return false, nil
			}
		}
		return true, nil
	})
	out := mustRun(t, "kubectl", kc, "get", "bp")
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if strings.Join(header, " ") != "NAME PRIORITY READY RESERVED WAITING BOUND AGE" {
		t.Errorf("kubectl get bp columns = %v, want NAME PRIORITY READY RESERVED WAITING BOUND AGE\n%s", header, out)
	}
	for _, name := range samples {
		if !strings.Contains(out, name) || !strings.Contains(out, "True") {
			t.Errorf("kubectl get bp does not show %s as Ready:\n%s", name, out)
		}
	}
	generations := map[string]int64{}
	for _, name := range samples {
		p := &bindgatev1alpha1.BindingPolicy{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			t.Fatal(err)
		}
		generations[name] = p.Generation
	}
	mustRun(t, "kubectl", kc, "apply", "--server-side", "--force-conflicts", "-f", "config/samples/")
	if r := run(t, "kubectl", kc, "diff", "--server-side", "--force-conflicts", "-f", "config/samples/"); r.err != nil {
		t.Errorf("kubectl diff --server-side after the operator reconciled reports drift (%v):\n%s%s", r.err, r.stdout, r.stderr)
	}
	for _, name := range samples {
		p := &bindgatev1alpha1.BindingPolicy{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			t.Fatal(err)
		}
		if p.Generation != generations[name] {
			t.Errorf("re-applying %s changed its spec: generation %d -> %d", name, generations[name], p.Generation)
		}
	}
}

func poll(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return cond() }); err != nil {
		t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// checkAPIPriority asserts that API Priority and Fairness classifies
// requests made with cfg under the chart's FlowSchema, at workload-high: the
// API server names both in the X-Kubernetes-PF-* headers of every response.
func checkAPIPriority(t *testing.T, admin kubernetes.Interface, cfg *rest.Config) {
	t.Helper()
	ctx := t.Context()
	fs, err := admin.FlowcontrolV1().FlowSchemas().Get(ctx, releaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's FlowSchema: %v", err)
	}
	pl, err := admin.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, "workload-high", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("PriorityLevelConfiguration workload-high: %v", err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var gotFS, gotPL string
	// The API server picks a new FlowSchema up asynchronously.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/api/v1/namespaces/"+releaseNS+"/pods?limit=1", nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		gotFS, gotPL = resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"), resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")
		return gotFS == string(fs.UID), nil
	})
	if err != nil {
		t.Fatalf("requests of the chart's ServiceAccount went to FlowSchema UID %q, want the chart's %s (%s): %v", gotFS, fs.Name, fs.UID, err)
	}
	if gotPL != string(pl.UID) {
		t.Errorf("priority level UID %q, want workload-high's %q", gotPL, pl.UID)
	}
}

// buildOperator builds the operator binary from this tree into a temporary
// directory.
func buildOperator(t *testing.T) string {
	t.Helper()
	operator := filepath.Join(t.TempDir(), "bindgate")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", operator, ".")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the operator: %v\n%s", err, out)
	}
	return operator
}

// freeLocalAddr is a loopback address with a port nothing listens on.
func freeLocalAddr(t *testing.T) string {
	t.Helper()
	var lc net.ListenConfig
	l, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// checkMetricsAuth: no token is 401, a token without the metrics-reader
// role (the operator's own) is 403, a scraper bound to it reads metrics.
func checkMetricsAuth(t *testing.T, admin kubernetes.Interface, addr, unprivilegedToken string) {
	t.Helper()
	ctx := t.Context()
	if _, err := admin.CoreV1().ServiceAccounts(releaseNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "bindgate-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: releaseNS}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts(releaseNS).CreateToken(ctx, "scraper",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The endpoint's certificate is self-signed; what is checked here is who
	// may read it.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test endpoint
	get := func(token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	for what, tc := range map[string]struct {
		token string
		want  int
	}{
		"no token":                       {want: http.StatusUnauthorized},
		"a token without metrics-reader": {token: unprivilegedToken, want: http.StatusForbidden},
		"the scraper's token":            {token: tr.Status.Token, want: http.StatusOK},
	} {
		var code int
		var body string
		poll(t, 30*time.Second, "/metrics answers "+what, func() (bool, error) {
			c, b, err := get(tc.token)
			code, body = c, b
			return err == nil && c == tc.want, nil
		})
		if tc.want == http.StatusOK && !strings.Contains(body, "bindgate_") {
			t.Errorf("/metrics for %s (%d) has no bindgate_ metric", what, code)
		}
	}
}
