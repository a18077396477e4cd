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

package permit

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/runtime"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// schemasJSON holds the OpenAPI schemas of Pod and Node (from the pinned
// Kubernetes release's OpenAPI v3 document) and of BindingPolicy (from its
// CRD), written by hack/celschema (`make generate`).
//
//go:embed schemas.json
var schemasJSON []byte

// Schema names in schemas.json.
const (
	podSchema    = "io.k8s.api.core.v1.Pod"
	nodeSchema   = "io.k8s.api.core.v1.Node"
	policySchema = "dev.bindgate.scheduling.v1alpha1.BindingPolicy"
	quantity     = "io.k8s.apimachinery.pkg.api.resource.Quantity"
)

// variable is one typed variable of the expression environment: its
// schema (to convert values) and its CEL declaration.
type variable struct {
	name   string
	schema common.Schema
	decl   *apiservercel.DeclType
}

// variables builds the typed pod, node and policy variables, as
// ValidatingAdmissionPolicy's type checker builds `object`: the schema with
// its references resolved, turned into a CEL declaration.
func variables() ([]variable, error) {
	var doc struct {
		Components struct {
			Schemas map[string]*spec.Schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(schemasJSON, &doc); err != nil {
		return nil, fmt.Errorf("reading the embedded schemas: %w", err)
	}
	schemas := doc.Components.Schemas
	// A Quantity is published as "string or number" (oneOf), which CEL
	// cannot declare; objects always carry it as a string, the argument
	// the quantity() function takes.
	schemas[quantity] = &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}
	lookup := func(ref string) (*spec.Schema, bool) {
		s, ok := schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
		return s, ok
	}
	var vars []variable
	for _, v := range []struct{ name, schema, typeName string }{
		{"pod", podSchema, "Pod"},
		{"node", nodeSchema, "Node"},
		{"policy", policySchema, "BindingPolicy"},
	} {
		s, err := resolver.PopulateRefs(lookup, v.schema)
		if err != nil {
			return nil, fmt.Errorf("resolving the schema of %s: %w", v.name, err)
		}
		schema := &openapi.Schema{Schema: s}
		decl := common.SchemaDeclType(schema, true)
		if decl == nil {
			return nil, fmt.Errorf("the schema of %s has no CEL type", v.name)
		}
		vars = append(vars, variable{name: v.name, schema: schema, decl: decl.MaybeAssignTypeName(v.typeName)})
	}
	return vars, nil
}

// value converts obj (a *corev1.Pod, *corev1.Node or *BindingPolicy, or
// nil) to the CEL value of the variable's type.
func (v variable) value(obj any) (ref.Val, error) {
	if obj == nil || isNilPointer(obj) {
		return types.NullValue, nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", v.name, err)
	}
	return common.UnstructuredToVal(u, v.schema), nil
}
