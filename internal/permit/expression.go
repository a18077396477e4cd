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

// Package permit implements the Permit conditions of a BindingPolicy. This
// file holds the `expression` kind: a CEL expression over `pod`, `node` and
// `policy` that must evaluate to true. Expressions are compiled with the
// Kubernetes CEL environment (the libraries of ValidatingAdmissionPolicy),
// each variable typed by its OpenAPI schema as ValidatingAdmissionPolicy's
// type checker types `object`, once per policy generation; an expression
// whose estimated worst-case cost is too high is refused, and evaluation runs
// under a cost limit.
package permit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
)

// CostLimit bounds the runtime cost of one evaluation (the unit of
// Kubernetes' CEL cost model): the per-call limit of ValidatingAdmissionPolicy.
const CostLimit = celconfig.PerCallLimit

// EstimatedCostLimit bounds the worst-case cost of an expression, estimated
// when it is compiled with the API server's CEL cost estimator (sizes from
// the schemas, as the API server sizes CRD validation rules). Pod and Node
// declare no maxItems or maxLength, so every list and string is sized only by
// the 3 MiB request limit, and expressions whose work grows linearly with the
// object estimate up to about 2e13: a pass over a list with a string or
// quantity function per element (3e12 for a regex over every image), a list
// inside a list (every container's env, 7e12). The limit sits between those
// and the expressions whose work grows with the square of the object:
// every pair of containers (7e17), a list joined into one string (2e18).
// The runtime CostLimit still stops any single evaluation.
const EstimatedCostLimit uint64 = 1_000_000_000_000_000

// RecheckAfter is how long a pod whose expression is false (or failed) waits
// at most before the expression is evaluated again. Pod updates re-run it at
// once; the timer covers changes to the node and the policy.
const RecheckAfter = 5 * time.Second

// ReasonFalse is the wait reason of an expression that evaluated to false.
const ReasonFalse = "expression is false"

var (
	envOnce sync.Once
	envSet  *environment.EnvSet
	envVars []variable
	errEnv  error
)

// envs is the CEL environment of permit expressions: the Kubernetes base
// environment (the libraries of ValidatingAdmissionPolicy) with pod, node
// and policy typed by their OpenAPI schemas, so a misspelt field or a
// comparison of an int with a string fails to compile.
func envs() (*environment.EnvSet, []variable, error) {
	envOnce.Do(func() {
		envVars, errEnv = variables()
		if errEnv != nil {
			return
		}
		opts := make([]cel.EnvOption, 0, len(envVars))
		decls := make([]*apiservercel.DeclType, 0, len(envVars))
		for _, v := range envVars {
			opts = append(opts, cel.Variable(v.name, v.decl.CelType()))
			decls = append(decls, v.decl)
		}
		envSet, errEnv = environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Extend(
			environment.VersionedOptions{
				IntroducedVersion: version.MajorMinor(1, 0),
				EnvOptions:        opts,
				DeclTypes:         decls,
			})
	})
	return envSet, envVars, errEnv
}

// compileExpression type-checks one expression. stored selects the
// permissive environment used for expressions already admitted.
func compileExpression(expr string, stored bool) (cel.Program, error) {
	set, _, err := envs()
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	env := set.NewExpressionsEnv()
	if stored {
		env = set.StoredExpressionsEnv()
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("the expression must evaluate to a bool, not %s", ast.OutputType())
	}
	if !stored {
		if err := checkCost(env, ast); err != nil {
			return nil, err
		}
	}
	prg, err := env.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("building the program: %w", err)
	}
	return prg, nil
}

// checkCost refuses an expression whose estimated worst-case cost exceeds
// EstimatedCostLimit.
func checkCost(env *cel.Env, ast *cel.Ast) error {
	_, vars, err := envs()
	if err != nil {
		return err
	}
	roots := make(map[string]*apiservercel.DeclType, len(vars))
	for _, v := range vars {
		roots[v.name] = v.decl
	}
	est, err := env.EstimateCost(ast, &library.CostEstimator{SizeEstimator: sizeEstimator(roots)})
	if err != nil {
		return fmt.Errorf("estimating the cost: %w", err)
	}
	if est.Max > EstimatedCostLimit {
		return fmt.Errorf("estimated worst-case cost %.3g exceeds the limit %.0e by a factor of %.3g "+
			"(avoid work that grows with the square of the object, such as comparing every pair of list items or joining a list into one string)",
			float64(est.Max), float64(EstimatedCostLimit), float64(est.Max)/float64(EstimatedCostLimit))
	}
	return nil
}

// sizeEstimator sizes the variables and their fields from their CEL
// declarations, as the API server's estimator does for a CRD's self.
type sizeEstimator map[string]*apiservercel.DeclType

func (roots sizeEstimator) EstimateSize(element checker.AstNode) *checker.SizeEstimate {
	path := element.Path()
	if len(path) == 0 {
		return nil
	}
	node := roots[path[0]]
	if node == nil {
		return nil
	}
	for _, name := range path[1:] {
		switch name {
		case "@items", "@values":
			node = node.ElemType
		case "@keys":
			node = node.KeyType
		default:
			field, ok := node.Fields[name]
			if !ok {
				return nil
			}
			node = field.Type
		}
		if node == nil {
			return nil
		}
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(node.MaxElements)}
}

func (sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// CheckExpression type-checks expr against the pod, node and policy
// schemas and refuses it when its estimated worst-case cost is too high.
func CheckExpression(expr string) error {
	_, err := compileExpression(expr, false)
	return err
}

// Expression is the permit plugin of one expression condition.
type Expression struct {
	name string
	prg  cel.Program
	err  error // compile error: the condition waits, saying why
}

var _ framework.PermitPlugin = (*Expression)(nil)

// NewExpression compiles expr into a plugin named name. A compile error is
// kept: the plugin then holds every pod with that error as the reason.
func NewExpression(name, expr string) *Expression {
	prg, err := compileExpression(expr, true)
	return &Expression{name: name, prg: prg, err: err}
}

// Name is the condition's name.
func (e *Expression) Name() string { return e.name }

// Permit approves the pod when the expression is true and holds it
// otherwise; an evaluation error holds it too, with the error as reason.
func (e *Expression) Permit(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node) (*framework.Status, time.Duration) {
	if e.err != nil {
		return framework.NewStatus(framework.Wait, "invalid expression: "+e.err.Error()), RecheckAfter
	}
	_, typed, err := envs()
	if err != nil {
		return framework.NewStatus(framework.Wait, err.Error()), RecheckAfter
	}
	objs := map[string]any{"pod": pod, "node": node, "policy": state.Policy}
	vars := make(map[string]any, len(typed))
	for _, v := range typed {
		val, err := v.value(objs[v.name])
		if err != nil {
			return framework.NewStatus(framework.Wait, err.Error()), RecheckAfter
		}
		vars[v.name] = val
	}
	out, _, err := e.prg.ContextEval(ctx, vars)
	if err != nil {
		return framework.NewStatus(framework.Wait, "evaluation error: "+err.Error()), RecheckAfter
	}
	ok, isBool := out.Value().(bool)
	if !isBool {
		return framework.NewStatus(framework.Wait, fmt.Sprintf("evaluation error: result is %s, not bool", out.Type())), RecheckAfter
	}
	if !ok {
		return framework.NewStatus(framework.Wait, ReasonFalse), RecheckAfter
	}
	return nil, 0
}

func isNilPointer(obj any) bool {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o == nil
	case *corev1.Node:
		return o == nil
	case *bindgatev1alpha1.BindingPolicy:
		return o == nil
	}
	return false
}

// Timeout is the policy's permit timeout (default 30s).
func Timeout(policy *bindgatev1alpha1.BindingPolicy) time.Duration {
	if policy.Spec.Permit != nil && policy.Spec.Permit.Timeout != nil && policy.Spec.Permit.Timeout.Duration > 0 {
		return policy.Spec.Permit.Timeout.Duration
	}
	return 30 * time.Second
}

// OnTimeout is what happens when the timeout passes (default Reject).
func OnTimeout(policy *bindgatev1alpha1.BindingPolicy) bindgatev1alpha1.PermitTimeoutAction {
	if policy.Spec.Permit != nil && policy.Spec.Permit.OnTimeout != "" {
		return policy.Spec.Permit.OnTimeout
	}
	return bindgatev1alpha1.PermitTimeoutReject
}
