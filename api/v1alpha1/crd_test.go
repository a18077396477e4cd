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

package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("decoding manifest: %v\n%s", err, manifest)
	}
	return u
}

// TestSamplesAreAccepted applies every file in config/samples and reads the
// policy back through the typed client.
func TestSamplesAreAccepted(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "config", "samples")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("want at least 3 sample policies in %s, found %d", dir, len(files))
	}
	sort.Strings(files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			u := decode(t, string(data))
			if err := env.Client.Create(context.Background(), u); err != nil {
				t.Fatalf("sample %s was refused: %v", f, err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) })
			got := &bindgatev1alpha1.BindingPolicy{}
			if err := env.Client.Get(context.Background(), types.NamespacedName{Name: u.GetName()}, got); err != nil {
				t.Fatal(err)
			}
			if got.Spec.Permit == nil || got.Spec.Permit.Timeout == nil {
				t.Fatalf("defaults not applied to permit: %+v", got.Spec.Permit)
			}
		})
	}
}

// TestDefaults checks the schema's defaults on a minimal policy.
func TestDefaults(t *testing.T) {
	u := decode(t, `
apiVersion: scheduling.bindgate.dev/v1alpha1
kind: BindingPolicy
metadata: {name: defaults}
spec:
  permit:
    conditions:
    - name: hook
      webhook: {url: "https://approver.example.com/permit"}
  postBind:
  - name: audit
    url: https://audit.example.com/bound
  - name: cmdb
    service: {namespace: cmdb, name: receiver}
`)
	ctx := context.Background()
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, u) })
	got := &bindgatev1alpha1.BindingPolicy{}
	if err := env.Client.Get(ctx, types.NamespacedName{Name: "defaults"}, got); err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]string{
		"scoring.strategy":   {string(got.Spec.Scoring.Strategy), "LeastAllocated"},
		"permit.timeout":     {got.Spec.Permit.Timeout.Duration.String(), "30s"},
		"permit.onTimeout":   {string(got.Spec.Permit.OnTimeout), "Reject"},
		"webhook.timeout":    {got.Spec.Permit.Conditions[0].Webhook.Timeout.Duration.String(), "10s"},
		"webhook.failure":    {string(got.Spec.Permit.Conditions[0].Webhook.FailurePolicy), "Fail"},
		"postBind.timeout":   {got.Spec.PostBind[0].Timeout.Duration.String(), "10s"},
		"postBind.attempts":  {fmt.Sprint(got.Spec.PostBind[0].MaxAttempts), "5"},
		"service.port":       {fmt.Sprint(*got.Spec.PostBind[1].Service.Port), "443"},
		"priority (default)": {fmt.Sprint(got.Spec.Priority), "0"},
		"mode":               {string(got.Spec.Mode), "Enforce"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s: got %q, want %q", name, c[0], c[1])
		}
	}
}

// TestCapacityRoundTrip checks that capacity values written as numbers and
// as strings are accepted and read back as the quantities they name.
func TestCapacityRoundTrip(t *testing.T) {
	u := decode(t, `
apiVersion: scheduling.bindgate.dev/v1alpha1
kind: BindingPolicy
metadata: {generateName: capacity-}
spec:
  capacity: {cpu: 2, memory: "4Gi", nvidia.com/gpu: "0", ephemeral-storage: 1.5e3}
`)
	ctx := context.Background()
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, u) })
	got := &bindgatev1alpha1.BindingPolicy{}
	if err := env.Client.Get(ctx, types.NamespacedName{Name: u.GetName()}, got); err != nil {
		t.Fatal(err)
	}
	gotValues := map[string]string{}
	for name, q := range got.Spec.Capacity {
		gotValues[string(name)] = q.String()
	}
	want := map[string]string{"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "0", "ephemeral-storage": "1500"}
	if diff := cmp.Diff(want, gotValues); diff != "" {
		t.Errorf("capacity read back (-want +got):\n%s", diff)
	}
	if err := env.Client.Update(ctx, got); err != nil {
		t.Errorf("writing the typed policy back: %v", err)
	}
}

// TestInvalidPoliciesAreRefused submits invalid policies and checks that the
// API server refuses each with an error that names the offending field.
func TestInvalidPoliciesAreRefused(t *testing.T) {
	cases := map[string]struct {
		spec string
		// want are substrings of the API server's error: the field path and
		// the gist of the message.
		want []string
		// refuse are substrings the error must not contain.
		refuse []string
	}{
		"one-of: expression and gang": {
			spec: `permit: {conditions: [{name: a, expression: "true", gang: {minMember: 2}}]}`,
			want: []string{"spec.permit.conditions[0]", "exactly one of expression, gang, volumes or webhook"},
		},
		"one-of: nothing set": {
			spec: `permit: {conditions: [{name: a}]}`,
			want: []string{"spec.permit.conditions[0]", "exactly one of"},
		},
		"gang topology with both key and levels": {
			spec: `permit: {conditions: [{name: g, gang: {minMember: 2, topology: {key: rack, levels: [zone, rack]}}}]}`,
			want: []string{"spec.permit.conditions[0].gang.topology", "exactly one of key or levels"},
		},
		"gang topology with an unknown mode": {
			spec: `permit: {conditions: [{name: g, gang: {minMember: 2, topology: {key: rack, mode: Sometimes}}}]}`,
			want: []string{"spec.permit.conditions[0].gang.topology.mode", "Unsupported value"},
		},
		"duplicate condition names": {
			spec: `permit: {conditions: [{name: a, expression: "true"}, {name: a, volumes: {}}]}`,
			want: []string{"spec.permit.conditions[1]", "Duplicate value"},
		},
		"condition name not a DNS label": {
			spec: `permit: {conditions: [{name: Not_A_Label, expression: "true"}]}`,
			want: []string{"spec.permit.conditions[0].name", "should match"},
		},
		"permit webhook with http URL": {
			spec: `permit: {conditions: [{name: a, webhook: {url: "http://approver.example.com/"}}]}`,
			want: []string{"spec.permit.conditions[0].webhook.url", "https://"},
		},
		"postBind with http URL": {
			spec: `postBind: [{name: audit, url: "http://audit.example.com/"}]`,
			want: []string{"spec.postBind[0].url", "https://"},
		},
		"bind webhook URL is not a URL": {
			spec: `bind: {webhook: {url: "not a url"}}`,
			want: []string{"spec.bind.webhook.url", "https://"},
		},
		"bind webhook without url or service": {
			spec: `bind: {webhook: {timeout: 5s}}`,
			want: []string{"spec.bind.webhook", "exactly one of url or service must be set"},
		},
		"webhook with both url and service": {
			spec: `postBind: [{name: audit, url: "https://a.example.com/", service: {namespace: audit, name: receiver}}]`,
			want: []string{"spec.postBind[0]", "exactly one of url or service must be set"},
		},
		"service reference with a bad port": {
			spec: `bind: {webhook: {service: {namespace: binder, name: api, port: 70000}}}`,
			want: []string{"spec.bind.webhook.service.port", "65535"},
		},
		"service reference with a query in its path": {
			spec: `permit: {conditions: [{name: a, webhook: {service: {namespace: ops, name: approver, path: "/permit?token=x"}}}]}`,
			want: []string{"spec.permit.conditions[0].webhook.service.path", "no query or fragment"},
		},
		"service reference with an invalid name": {
			spec: `bind: {webhook: {service: {namespace: binder, name: "Not_A_Name"}}}`,
			want: []string{"spec.bind.webhook.service.name", "should match"},
		},
		"permit timeout 0s": {
			spec: `permit: {timeout: 0s}`,
			want: []string{"spec.permit.timeout", "between 1s and 15m"},
		},
		"permit timeout 16m": {
			spec: `permit: {timeout: 16m}`,
			want: []string{"spec.permit.timeout", "between 1s and 15m"},
		},
		"permit onTimeout unknown": {
			spec: `permit: {onTimeout: Drop}`,
			want: []string{"spec.permit.onTimeout", "Unsupported value"},
		},
		"gang minMember 1": {
			spec: `permit: {conditions: [{name: g, gang: {minMember: 1}}]}`,
			want: []string{"spec.permit.conditions[0].gang.minMember", "greater than or equal to 2"},
		},
		"two gang conditions": {
			spec: `permit: {conditions: [{name: g1, gang: {minMember: 2}}, {name: g2, gang: {minMember: 3}}]}`,
			want: []string{"spec.permit.conditions", "at most one gang condition"},
		},
		"unknown scoring strategy": {
			spec: `scoring: {strategy: Fastest}`,
			want: []string{"spec.scoring.strategy", "Unsupported value"},
		},
		"negative capacity": {
			spec: `capacity: {cpu: "2", memory: "-4Gi"}`,
			want: []string{"spec.capacity[memory]: Invalid value", "must not be negative"},
		},
		"negative integer capacity": {
			spec: `capacity: {pods: -3}`,
			want: []string{"spec.capacity[pods]: Invalid value", "must not be negative"},
		},
		"capacity that is not a quantity": {
			spec:   `capacity: {cpu: "lots", memory: "2Gi"}`,
			want:   []string{"spec.capacity[cpu]: Invalid value", "must be a quantity such as 500m or 2Gi"},
			refuse: []string{"should match", "[0-9]"},
		},
		"capacity value too long": {
			spec: `capacity: {cpu: "` + strings.Repeat("1", 65) + `"}`,
			want: []string{"spec.capacity.cpu", "Too long: may not be more than 64 bytes"},
		},
		"unknown mode": {
			spec: `mode: Audit`,
			want: []string{"spec.mode", "Unsupported value", "Enforce", "DryRun"},
		},
		"priority below 0": {
			spec: `priority: -1`,
			want: []string{"spec.priority", "greater than or equal to 0"},
		},
		"priority above 1000": {
			spec: `priority: 1001`,
			want: []string{"spec.priority", "less than or equal to 1000"},
		},
		"postBind maxAttempts 0": {
			spec: `postBind: [{name: audit, url: "https://audit.example.com/", maxAttempts: 0}]`,
			want: []string{"spec.postBind[0].maxAttempts", "greater than or equal to 1"},
		},
		"postBind maxAttempts 21": {
			spec: `postBind: [{name: audit, url: "https://audit.example.com/", maxAttempts: 21}]`,
			want: []string{"spec.postBind[0].maxAttempts", "less than or equal to 20"},
		},
		"duplicate postBind names": {
			spec: `postBind: [{name: audit, url: "https://a.example.com/"}, {name: audit, url: "https://b.example.com/"}]`,
			want: []string{"spec.postBind[1]", "Duplicate value"},
		},
		"webhook timeout 31s": {
			spec: `postBind: [{name: audit, url: "https://audit.example.com/", timeout: 31s}]`,
			want: []string{"spec.postBind[0].timeout", "between 1s and 30s"},
		},
		"webhook timeout 500ms": {
			spec: `bind: {webhook: {url: "https://cmdb.example.com/", timeout: 500ms}}`,
			want: []string{"spec.bind.webhook.timeout", "between 1s and 30s"},
		},
		"permit webhook failurePolicy unknown": {
			spec: `permit: {conditions: [{name: a, webhook: {url: "https://a.example.com/", failurePolicy: Maybe}}]}`,
			want: []string{"spec.permit.conditions[0].webhook.failurePolicy", "Unsupported value"},
		},
		"permit webhook timeout longer than permit timeout": {
			spec: `permit: {timeout: 5s, conditions: [{name: a, webhook: {url: "https://a.example.com/", timeout: 20s}}]}`,
			want: []string{"spec.permit", "webhook.timeout must not exceed spec.permit.timeout"},
		},
		"postBind name clashes with a condition name": {
			spec: `permit: {conditions: [{name: audit, expression: "true"}]}, postBind: [{name: audit, url: "https://a.example.com/"}]`,
			want: []string{"spec", "spec.postBind names must differ from spec.permit.conditions names"},
		},
		"signingSecretRef without key": {
			spec: `postBind: [{name: audit, url: "https://a.example.com/", signingSecretRef: {name: hooks}}]`,
			want: []string{"spec.postBind[0].signingSecretRef.key", "Required value"},
		},
		"webhook url without a host": {
			spec: `postBind: [{name: audit, url: "https:///bound"}]`,
			want: []string{"spec.postBind[0].url", "url must name a host"},
		},
		"webhook url with user info": {
			spec: `bind: {webhook: {url: "https://admin:secret@binder.example.com/bind"}}`,
			want: []string{"spec.bind.webhook.url", "url must not carry user info"},
		},
		"permit webhook url with a user name": {
			spec: `permit: {conditions: [{name: a, webhook: {url: "https://someone@approver.example.com/"}}]}`,
			want: []string{"spec.permit.conditions[0].webhook.url", "url must not carry user info"},
		},
		"pod selector with an unknown operator": {
			spec: `podSelector: {matchExpressions: [{key: app, operator: Near, values: [web]}]}`,
			want: []string{"spec.podSelector", "operator must be In, NotIn, Exists or DoesNotExist"},
		},
		"namespace selector In without values": {
			spec: `namespaceSelector: {matchExpressions: [{key: team, operator: In}]}`,
			want: []string{"spec.namespaceSelector", "values must be non-empty for In and NotIn"},
		},
		"node selector Exists with values": {
			spec: `nodeSelector: {matchExpressions: [{key: pool, operator: Exists, values: [a]}]}`,
			want: []string{"spec.nodeSelector", "empty for Exists and DoesNotExist"},
		},
		"expression too long": {
			spec: `permit: {conditions: [{name: a, expression: "` + strings.Repeat("x", 4097) + `"}]}`,
			want: []string{"spec.permit.conditions[0].expression", "Too long"},
		},
	}
	ctx := context.Background()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := decode(t, "apiVersion: scheduling.bindgate.dev/v1alpha1\nkind: BindingPolicy\nmetadata: {generateName: invalid-}\nspec: {"+tc.spec+"}\n")
			err := env.Client.Create(ctx, u)
			if err == nil {
				_ = env.Client.Delete(ctx, u)
				t.Fatalf("the API server accepted an invalid policy: %s", tc.spec)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			for _, r := range tc.refuse {
				if strings.Contains(err.Error(), r) {
					t.Errorf("error contains %q:\n%v", r, err)
				}
			}
			t.Log(err)
		})
	}
	if len(cases) < 20 {
		t.Fatalf("want at least 20 invalid cases, have %d", len(cases))
	}
}

// TestKubectlExplain runs the built kubectl against the API server.
func TestKubectlExplain(t *testing.T) {
	kubectl := filepath.Join(env.AssetsDir, "kubectl")
	out, err := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", env.Kubeconfig, "explain", "bindingpolicy.spec.permit").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl explain: %v\n%s", err, out)
	}
	for _, w := range []string{
		"FIELD: permit",
		"permit lists the conditions that must all approve",
		"timeout is how long a reserved pod may wait",
		"onTimeout",
		"conditions",
	} {
		if !strings.Contains(string(out), w) {
			t.Errorf("kubectl explain output lacks %q:\n%s", w, out)
		}
	}
}
