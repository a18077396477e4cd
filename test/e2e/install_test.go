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
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/bindgate/bindgate/internal/testenv"
)

// TestHelmInstallUpgradeUninstall installs the chart into a real API server
// the way an admin does. envtest has no kubelets, so the pods never run:
// install without --wait and check the objects.
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	if testing.Short() {
		t.Skip("envtest suite; run without -short")
	}
	tool(t, "helm") // fail before starting a control plane
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	cs := env.Clientset
	kc := "--kubeconfig=" + env.Kubeconfig

	// testenv installs the CRD already; Helm's crds/ skips an existing one,
	// so delete it first to see Helm install it.
	crdName := "bindingpolicies.scheduling.bindgate.dev"
	mustRun(t, "kubectl", kc, "delete", "crd", crdName, "--wait=true")

	mustRun(t, "helm", kc, "install", releaseName, chartDir,
		"--namespace", releaseNS, "--create-namespace", "--wait=false")

	for what, get := range map[string]func() error{
		"ServiceAccount": func() error {
			_, err := cs.CoreV1().ServiceAccounts(releaseNS).Get(ctx, "bindgate-controller-manager", metav1.GetOptions{})
			return err
		},
		"ClusterRole": func() error {
			_, err := cs.RbacV1().ClusterRoles().Get(ctx, "bindgate-manager-role", metav1.GetOptions{})
			return err
		},
		"ClusterRoleBinding": func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "bindgate-manager-rolebinding", metav1.GetOptions{})
			return err
		},
		"Role": func() error {
			_, err := cs.RbacV1().Roles(releaseNS).Get(ctx, "bindgate-leader-election-role", metav1.GetOptions{})
			return err
		},
		"metrics Service": func() error {
			_, err := cs.CoreV1().Services(releaseNS).Get(ctx, "bindgate-metrics-service", metav1.GetOptions{})
			return err
		},
		"webhook Service": func() error {
			_, err := cs.CoreV1().Services(releaseNS).Get(ctx, "bindgate-webhook-service", metav1.GetOptions{})
			return err
		},
		"MutatingWebhookConfiguration": func() error {
			_, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "bindgate-mutating-webhook-configuration", metav1.GetOptions{})
			return err
		},
		"ValidatingWebhookConfiguration": func() error {
			_, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "bindgate-validating-webhook-configuration", metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); err != nil {
			t.Errorf("%s after helm install: %v", what, err)
		}
	}
	checkReplicas := func(want int32) {
		t.Helper()
		dep, err := cs.AppsV1().Deployments(releaseNS).Get(ctx, "bindgate-controller-manager", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Deployment: %v", err)
		}
		if *dep.Spec.Replicas != want {
			t.Fatalf("Deployment replicas = %d, want %d", *dep.Spec.Replicas, want)
		}
	}
	checkReplicas(2)
	if out := mustRun(t, "kubectl", kc, "get", "crd", crdName, "-o", "name"); out == "" {
		t.Fatal("helm install did not install the CRD")
	}
	// The BindingPolicy API is usable: the samples apply. No operator pod runs
	// here (envtest has no kubelets), so nothing serves the policy webhook,
	// whose failurePolicy is Fail: take it away first, as `helm install
	// --set webhook.enabled=false` would.
	if err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "bindgate-validating-webhook-configuration", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "kubectl", kc, "apply", "-f", "config/samples/")

	mustRun(t, "helm", kc, "upgrade", releaseName, chartDir,
		"--namespace", releaseNS, "--set", "replicaCount=3", "--wait=false")
	checkReplicas(3)

	mustRun(t, "helm", kc, "uninstall", releaseName, "--namespace", releaseNS, "--wait")
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.AppsV1().Deployments(releaseNS).Get(ctx, "bindgate-controller-manager", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Errorf("the Deployment survived helm uninstall: %v", err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, "bindgate-manager-role", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterRole survived helm uninstall: %v", err)
	}
	// Helm never deletes crds/: the CRD and the policies stay.
	mustRun(t, "kubectl", kc, "get", "crd", crdName)
	mustRun(t, "kubectl", kc, "get", "bindingpolicies.scheduling.bindgate.dev", "-o", "name")

	// The kustomize tree is accepted by the same API server (server-side
	// dry run; the namespace is still there from the Helm release).
	mustRun(t, "kubectl", kc, "apply", "-k", "config/default", "--dry-run=server")
}
