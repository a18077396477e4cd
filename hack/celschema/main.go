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

// Command celschema writes the OpenAPI schemas that permit expressions are
// type-checked against: Pod and Node (with every schema they refer to) from
// the pinned Kubernetes release's published OpenAPI v3 document, and
// BindingPolicy from its generated CRD. Descriptions are dropped; nothing
// else is changed. `make generate` runs it; `make verify` fails when the
// output is stale.
//
//	go run ./hack/celschema --core <k8s>/api/openapi-spec/v3/api__v1_openapi.json \
//	    --crd config/crd/bases/scheduling.bindgate.dev_bindingpolicies.yaml --out internal/permit/schemas.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

const refPrefix = "#/components/schemas/"

// Roots are the schemas the expression variables use.
var roots = []string{"io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.Node"}

// PolicyName is the name the BindingPolicy schema is written under.
const PolicyName = "dev.bindgate.scheduling.v1alpha1.BindingPolicy"

func main() {
	core := flag.String("core", "", "the OpenAPI v3 document of the core API group (api__v1_openapi.json)")
	crd := flag.String("crd", "", "the BindingPolicy CRD manifest")
	out := flag.String("out", "", "the file to write")
	flag.Parse()
	if err := run(*core, *crd, *out); err != nil {
		fmt.Fprintln(os.Stderr, "celschema:", err)
		os.Exit(1)
	}
}

func run(corePath, crdPath, out string) error {
	if corePath == "" || crdPath == "" || out == "" {
		return fmt.Errorf("--core, --crd and --out are required")
	}
	b, err := os.ReadFile(corePath)
	if err != nil {
		return err
	}
	var doc struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", corePath, err)
	}
	all := doc.Components.Schemas
	kept := map[string]any{}
	var walk func(name string) error
	walk = func(name string) error {
		if _, ok := kept[name]; ok {
			return nil
		}
		s, ok := all[name]
		if !ok {
			return fmt.Errorf("%s: no schema %q", corePath, name)
		}
		s = strip(s)
		kept[name] = s
		for _, ref := range refs(s, nil) {
			if err := walk(ref); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range roots {
		if err := walk(r); err != nil {
			return err
		}
	}

	b, err = os.ReadFile(crdPath)
	if err != nil {
		return err
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		return fmt.Errorf("%s: %w", crdPath, err)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1alpha1" {
		return fmt.Errorf("%s: want exactly the version v1alpha1", crdPath)
	}
	policy, _ := strip(crd.Spec.Versions[0].Schema.OpenAPIV3Schema).(map[string]any)
	props, _ := policy["properties"].(map[string]any)
	if props == nil {
		return fmt.Errorf("%s: the schema has no properties", crdPath)
	}
	// The API server serves a custom resource's metadata with the full
	// ObjectMeta; the CRD schema only says "object".
	props["metadata"] = map[string]any{"$ref": refPrefix + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
	kept[PolicyName] = policy

	w, err := json.MarshalIndent(map[string]any{"components": map[string]any{"schemas": kept}}, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(w, '\n'), 0o644)
}

// strip drops descriptions (documentation, not types) and validation rules
// (they are the API server's business) from s.
func strip(s any) any {
	switch v := s.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			if _, isString := e.(string); (k == "description" && isString) || k == "x-kubernetes-validations" {
				continue
			}
			m[k] = strip(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = strip(e)
		}
		return l
	}
	return s
}

// refs lists the schema names s refers to, sorted.
func refs(s any, acc []string) []string {
	switch v := s.(type) {
	case map[string]any:
		for k, e := range v {
			if r, ok := e.(string); ok && k == "$ref" && strings.HasPrefix(r, refPrefix) {
				acc = append(acc, strings.TrimPrefix(r, refPrefix))
				continue
			}
			acc = refs(e, acc)
		}
	case []any:
		for _, e := range v {
			acc = refs(e, acc)
		}
	}
	sort.Strings(acc)
	return acc
}
