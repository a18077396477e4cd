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

// Package e2e drives the install artifacts the way users do: helm lint,
// template, install, upgrade and uninstall against a real API server, and
// kustomize builds of config/. The tools come from bin/ (make test builds
// them); a missing tool is a failure, never a skip.
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

	"sigs.k8s.io/yaml"

	"github.com/bindgate/bindgate/internal/testenv"
)

const (
	chartDir    = "config/helm/bindgate"
	releaseName = "bindgate"
	releaseNS   = "bindgate-system"
)

func repoPath(p ...string) string {
	return filepath.Join(append([]string{testenv.RepoRoot()}, p...)...)
}

// tool returns the path of a binary in bin/, failing the test when missing.
// With -short (make test-unit: no tools, no control plane) it skips.
func tool(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs bin/%s; run without -short", name)
	}
	p := filepath.Join(testenv.AssetsDir(), name)
	if _, err := os.Stat(p); err != nil {
		p = repoPath("bin", name)
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing in bin/: run 'make %s' (make test builds it): %v", name, p, err)
		}
	}
	return p
}

type result struct {
	stdout, stderr string
	err            error
}

// run runs a tool from bin/ in the repository root with a private Helm home.
func run(t *testing.T, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool(t, name), args...)
	cmd.Dir = testenv.RepoRoot()
	home := helmHome
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return result{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// mustRun is run that fails the test on a non-zero exit.
func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	r := run(t, name, args...)
	if r.err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r.stdout
}

// helmHome keeps Helm's cache, config and data out of the user's home.
var helmHome string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bindgate-e2e-helm-")
	if err != nil {
		panic(err)
	}
	helmHome = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// object is one rendered manifest: its raw YAML and its kind and name.
type object struct {
	Kind     string
	Name     string
	Manifest []byte
}

// splitManifests splits a multi-document YAML stream.
func splitManifests(t *testing.T, stream string) []object {
	t.Helper()
	var objs []object
	for _, doc := range strings.Split("\n"+stream, "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		objs = append(objs, object{Kind: meta.Kind, Name: meta.Metadata.Name, Manifest: []byte(doc)})
	}
	return objs
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// find returns the objects of a kind; it decodes each into a new T.
func find[T any](t *testing.T, objs []object, kind string) []*T {
	t.Helper()
	var out []*T
	for _, o := range objs {
		if o.Kind != kind {
			continue
		}
		v := new(T)
		if err := yaml.UnmarshalStrict(o.Manifest, v); err != nil {
			t.Fatalf("decoding %s %s: %v", o.Kind, o.Name, err)
		}
		out = append(out, v)
	}
	return out
}

func one[T any](t *testing.T, objs []object, kind string) *T {
	t.Helper()
	all := find[T](t, objs, kind)
	if len(all) != 1 {
		t.Fatalf("want one %s, rendered %d", kind, len(all))
	}
	return all[0]
}
