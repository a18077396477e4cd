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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv"
)

// TestKubectlPlugin installs the plugin with `make install-plugin` and runs
// it the way users do, through kubectl's plugin lookup: `kubectl bindgate
// explain pod ...` on a gated pod no policy selects, on a pod bindgate does
// not handle, and the krew manifest names the installed binary.
func TestKubectlPlugin(t *testing.T) {
	kubectl := tool(t, "kubectl")
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, "make", "install-plugin", "LOCALBIN="+filepath.Join(dir, "bin"), "PLUGIN_DIR="+plugins)
	install.Dir = testenv.RepoRoot()
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("make install-plugin: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(plugins, "kubectl-bindgate")); err != nil {
		t.Fatalf("make install-plugin did not install kubectl-bindgate: %v", err)
	}

	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plugin"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, gated bool) {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
		}
		if gated {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}}
		}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	pod("gated", true)
	pod("plain", false)

	kubectlBindgate := func(args ...string) (string, string, error) {
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"bindgate"}, append(args, "--kubeconfig", env.Kubeconfig)...)...)
		cmd.Env = append(os.Environ(), "PATH="+plugins+string(os.PathListSeparator)+os.Getenv("PATH"))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	out, errOut, err := kubectlBindgate("explain", "pod", "gated", "-n", ns.Name)
	if err != nil {
		t.Fatalf("kubectl bindgate explain: %v\n%s%s", err, out, errOut)
	}
	for _, w := range []string{"Pod plugin/gated: no policy takes it: no BindingPolicy selects this pod", "Timeline:"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.TrimSpace(errOut) != "" {
		t.Errorf("stderr is not empty (framework logs must not leak):\n%s", errOut)
	}
	_, errOut, err = kubectlBindgate("explain", "pod", "plain", "-n", ns.Name)
	if err == nil || !strings.Contains(errOut, "pod does not use bindgate") {
		t.Errorf("explain on a pod bindgate does not handle: err %v, stderr %q", err, errOut)
	}

	data, err := os.ReadFile(repoPath("config", "krew", "bindgate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Platforms []struct {
				Bin string `json:"bin"`
				URI string `json:"uri"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &manifest); err != nil {
		t.Fatal(err)
	}
	if manifest.Kind != "Plugin" || manifest.Metadata.Name != "bindgate" || len(manifest.Spec.Platforms) == 0 {
		t.Fatalf("krew manifest: kind %q, name %q, %d platforms", manifest.Kind, manifest.Metadata.Name, len(manifest.Spec.Platforms))
	}
	for _, p := range manifest.Spec.Platforms {
		if p.Bin != "kubectl-bindgate" {
			t.Errorf("krew platform %s runs %q, want kubectl-bindgate", p.URI, p.Bin)
		}
	}
}
