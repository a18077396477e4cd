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
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	policywebhook "github.com/bindgate/bindgate/internal/admission/policy"
	"github.com/bindgate/bindgate/internal/policy"
	"github.com/bindgate/bindgate/internal/testenv"
)

const (
	approvedAnnotation = bindgatev1alpha1.Prefix + "approved"
	approvedExpr       = `has(pod.metadata.annotations) && pod.metadata.annotations[?'scheduling.bindgate.dev/approved'].orValue('') == 'true'`
)

// withPermit adds an "approved" expression condition with a timeout.
func withPermit(expr string, timeout time.Duration, onTimeout bindgatev1alpha1.PermitTimeoutAction) func(*bindgatev1alpha1.BindingPolicy) {
	return func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.Permit = &bindgatev1alpha1.Permit{
			Timeout:    &metav1.Duration{Duration: timeout},
			OnTimeout:  onTimeout,
			Conditions: []bindgatev1alpha1.PermitCondition{{Name: "approved", Expression: expr}},
		}
	}
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func getPolicy(t *testing.T, name string) *bindgatev1alpha1.BindingPolicy {
	t.Helper()
	p := &bindgatev1alpha1.BindingPolicy{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func waitReady(t *testing.T, name string) {
	t.Helper()
	eventually(t, 10*time.Second, "policy "+name+" Ready", func() (bool, error) {
		return meta.IsStatusConditionTrue(getPolicy(t, name).Status.Conditions, bindgatev1alpha1.ConditionReady), nil
	})
}

func TestPermitManualApproval(t *testing.T) {
	startManager(t, 4)
	pol := uniq("approve")
	pool(t, pol, withPermit(approvedExpr, 60*time.Second, bindgatev1alpha1.PermitTimeoutReject))
	newNode(uniq(pol+"-node")).label("pool", pol).create(t)
	waitReady(t, pol)
	ns := namespace(t, nil)
	newPod(ns, "a").policy(pol).req(corev1.ResourceCPU, "100m").create(t)

	eventually(t, 10*time.Second, "pod waiting in Permit", func() (bool, error) {
		c := podCondition(getPod(t, ns, "a"), bindgatev1alpha1.PodConditionPermitted)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == bindgatev1alpha1.ReasonWaiting, nil
	})
	p := getPod(t, ns, "a")
	if c := podCondition(p, bindgatev1alpha1.PodConditionPermitted); c.Message != "approved: expression is false" {
		t.Errorf("Permitted message = %q", c.Message)
	}
	eventually(t, 5*time.Second, "waitingPods = 1", func() (bool, error) {
		st := getPolicy(t, pol).Status
		return st.WaitingPods == 1 && len(st.Reservations) == 1 && st.Reservations[0].PermitDeadline != nil, nil
	})
	// The wait is reported once, not on every re-evaluation (its own
	// condition updates re-evaluate it at once, a timer every few seconds).
	eventually(t, 5*time.Second, "PermitWaiting event", func() (bool, error) {
		return hasEvent(t, ns, "a", "PermitWaiting", "approved: expression is false"), nil
	})
	consistently(t, 2*time.Second, "PermitWaiting reported once", func() bool {
		return eventTimes(t, ns, "a", "PermitWaiting") == 1
	})
	if p := getPod(t, ns, "a"); p.Spec.NodeName != "" {
		t.Fatalf("pod bound to %s before approval", p.Spec.NodeName)
	}

	p = getPod(t, ns, "a")
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[approvedAnnotation] = "true"
	if err := env.Client.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	approvedAt := time.Now()
	eventually(t, 5*time.Second, "pod bound after approval", func() (bool, error) {
		return getPod(t, ns, "a").Spec.NodeName != "", nil
	})
	if d := time.Since(approvedAt); d > time.Second {
		t.Errorf("bound %v after the approval, want < 1s", d)
	} else {
		t.Logf("bound %v after the approval", d)
	}
	if c := podCondition(getPod(t, ns, "a"), bindgatev1alpha1.PodConditionPermitted); c == nil || c.Status != corev1.ConditionTrue || c.Reason != bindgatev1alpha1.ReasonPermitted {
		t.Errorf("Permitted = %+v, want True/Permitted", c)
	}
	n := 0
	for _, e := range events(t, ns, "a") {
		if strings.HasPrefix(e, "PermitWaiting: ") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d PermitWaiting events, want 1", n)
	}
}

func TestPermitTimeoutReject(t *testing.T) {
	startManager(t, 4)
	pol := uniq("reject")
	pool(t, pol, withPermit(approvedExpr, 2*time.Second, bindgatev1alpha1.PermitTimeoutReject))
	newNode(uniq(pol+"-node")).label("pool", pol).create(t)
	waitReady(t, pol)
	ns := namespace(t, nil)
	start := time.Now()
	newPod(ns, "a").policy(pol).create(t)

	eventually(t, 10*time.Second, "PodScheduled=False after the permit timeout", func() (bool, error) {
		c := podCondition(getPod(t, ns, "a"), corev1.PodScheduled)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
			strings.Contains(c.Message, "permit timeout") && strings.Contains(c.Message, "approved: expression is false"), nil
	})
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("rejected after %v, before the 2s timeout", d)
	}
	eventually(t, 5*time.Second, "reservation released", func() (bool, error) {
		return len(getPolicy(t, pol).Status.Reservations) == 0, nil
	})
	// The rejected pod takes no new reservation until something changes,
	// although its own condition updates requeue it at once.
	consistently(t, time.Second, "no reservation during the backoff after the rejection", func() bool {
		return len(getPolicy(t, pol).Status.Reservations) == 0
	})
	eventually(t, 5*time.Second, "PermitTimeout event", func() (bool, error) {
		return hasEvent(t, ns, "a", "PermitTimeout", "approved"), nil
	})
	if c := podCondition(getPod(t, ns, "a"), bindgatev1alpha1.PodConditionPermitted); c == nil || c.Reason != bindgatev1alpha1.ReasonTimeout {
		t.Errorf("Permitted = %+v, want reason Timeout", c)
	}
	if p := getPod(t, ns, "a"); p.Spec.NodeName != "" {
		t.Errorf("rejected pod bound to %s", p.Spec.NodeName)
	}
}

func TestPermitTimeoutRetry(t *testing.T) {
	startManager(t, 4)
	pol := uniq("retry")
	pool(t, pol, withPermit(approvedExpr, time.Second, bindgatev1alpha1.PermitTimeoutRetry))
	newNode(uniq(pol+"-node")).label("pool", pol).create(t)
	waitReady(t, pol)
	ns := namespace(t, nil)
	newPod(ns, "a").policy(pol).create(t)

	eventually(t, 10*time.Second, "timed out and released", func() (bool, error) {
		c := podCondition(getPod(t, ns, "a"), bindgatev1alpha1.PodConditionPermitted)
		return c != nil && c.Reason == bindgatev1alpha1.ReasonTimeout && len(getPolicy(t, pol).Status.Reservations) == 0, nil
	})
	if c := podCondition(getPod(t, ns, "a"), corev1.PodScheduled); c != nil && c.Reason == corev1.PodReasonUnschedulable {
		t.Errorf("Retry marked the pod unschedulable: %+v", c)
	}
	// Requeued: it reserves and waits again.
	eventually(t, 10*time.Second, "waiting again after the retry", func() (bool, error) {
		c := podCondition(getPod(t, ns, "a"), bindgatev1alpha1.PodConditionPermitted)
		return c != nil && c.Reason == bindgatev1alpha1.ReasonWaiting && len(getPolicy(t, pol).Status.Reservations) == 1, nil
	})
	// Approve: the retried pod binds.
	p := getPod(t, ns, "a")
	p.Annotations = map[string]string{approvedAnnotation: "true"}
	if err := env.Client.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "bound after approval", func() (bool, error) {
		return getPod(t, ns, "a").Spec.NodeName != "", nil
	})
}

// typedExpressions are permit expressions checked against the Pod, Node
// and BindingPolicy schemas; wantErr is a substring of the compile error,
// empty for a valid expression.
var typedExpressions = map[string]struct{ expr, wantErr string }{
	"syntax error":             {`pod.metadata.name ==`, "Syntax error"},
	"int compared with string": {`pod.spec.priority == 'high'`, "found no matching overload for '_==_' applied to '(int, string)'"},
	"unknown field":            {`pod.spec.nodeNam == ''`, "undefined field 'nodeNam'"},
	"not a bool":               {`node.metadata.name`, "the expression must evaluate to a bool, not string"},
	"optional field with has":  {`!has(pod.spec.nodeName) || pod.spec.nodeName == node.metadata.name`, ""},
	"optional field with ?.":   {`node.metadata.labels[?'zone'].orValue('') == 'a'`, ""},
	"cost: a list in a list":   {`pod.spec.containers.all(c, !has(c.env) || c.env.all(e, e.name != 'DEBUG'))`, ""},
	"cost: every pair":         {`pod.spec.containers.all(c, pod.spec.containers.all(d, c.name == d.name || c.image != d.image))`, "estimated worst-case cost 6.92e+17 exceeds the limit 1e+15"},
}

// TestPermitInvalidExpression runs without the admission webhook (as the
// playground and `make run` do): the policy controller type-checks each
// expression and reports the error on the policy.
func TestPermitInvalidExpression(t *testing.T) {
	startManager(t, 4)
	for name, tc := range typedExpressions {
		t.Run(name, func(t *testing.T) {
			pol := uniq("typed")
			pool(t, pol, withPermit(tc.expr, 30*time.Second, bindgatev1alpha1.PermitTimeoutReject))
			eventually(t, 10*time.Second, "policy Ready reflects the expression", func() (bool, error) {
				c := meta.FindStatusCondition(getPolicy(t, pol).Status.Conditions, bindgatev1alpha1.ConditionReady)
				if c == nil {
					return false, nil
				}
				if tc.wantErr == "" {
					if c.Status == metav1.ConditionFalse {
						return false, fmt.Errorf("valid expression refused: %s", c.Message)
					}
					return c.Status == metav1.ConditionTrue, nil
				}
				return c.Status == metav1.ConditionFalse && c.Reason == bindgatev1alpha1.ReasonInvalidExpression &&
					strings.Contains(c.Message, "spec.permit.conditions[0].expression") && strings.Contains(c.Message, "condition approved: ") && strings.Contains(c.Message, tc.wantErr), nil
			})
		})
	}
}

// TestInvalidPolicyHoldsItsPods: a pod of a policy whose expression does not
// compile stays gated, saying so.
func TestInvalidPolicyHoldsItsPods(t *testing.T) {
	startManager(t, 4)
	pol := uniq("invalid")
	pool(t, pol, withPermit(`pod.spec.priority == 'high'`, 30*time.Second, bindgatev1alpha1.PermitTimeoutReject))
	newNode(uniq(pol+"-node")).label("pool", pol).create(t)
	eventually(t, 10*time.Second, "policy Ready=False", func() (bool, error) {
		c := meta.FindStatusCondition(getPolicy(t, pol).Status.Conditions, bindgatev1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse, nil
	})
	ns := namespace(t, nil)
	newPod(ns, "a").policy(pol).create(t)
	eventually(t, 10*time.Second, "pod gated with PolicyNotReady", func() (bool, error) {
		c := podCondition(getPod(t, ns, "a"), bindgatev1alpha1.PodConditionPolicyMatched)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == bindgatev1alpha1.ReasonPolicyNotReady, nil
	})
	p := getPod(t, ns, "a")
	if p.Spec.NodeName != "" || len(p.Spec.SchedulingGates) == 0 {
		t.Errorf("pod of an invalid policy was scheduled: node %q gates %v", p.Spec.NodeName, p.Spec.SchedulingGates)
	}
	if n := len(getPolicy(t, pol).Status.Reservations); n != 0 {
		t.Errorf("%d reservations for an invalid policy", n)
	}
}

// TestPolicyWebhookRefusesInvalidExpression serves the validating webhook
// from the generated configuration in its own API server.
func TestPolicyWebhookRefusesInvalidExpression(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own API server")
	}
	whEnv, err := testenv.Start(testenv.WithAdmission(testenv.DefaultAdmissionManifests))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = whEnv.Stop() })
	whEnv.ServeAdmission(t, func(m ctrl.Manager) error { return policywebhook.Setup(m, policy.Validator{}) })
	ctx := context.Background()

	withZone := func(name, expr string) *bindgatev1alpha1.BindingPolicy {
		p := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		withPermit(approvedExpr, 30*time.Second, bindgatev1alpha1.PermitTimeoutReject)(p)
		p.Spec.Permit.Conditions = append(p.Spec.Permit.Conditions,
			bindgatev1alpha1.PermitCondition{Name: "zone", Expression: expr})
		return p
	}
	c := whEnv.Client
	// failurePolicy is Fail: until the server answers, writes fail with a
	// connection error. Wait for the first real verdict.
	var createErr error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		createErr = c.Create(ctx, withZone("bad", `node.metadata.labels['zone'] ==`), client.DryRunAll)
		return createErr != nil && strings.Contains(createErr.Error(), "spec.permit.conditions[1].expression"), nil
	}); err != nil {
		t.Fatalf("the webhook never refused the policy; last error: %v", createErr)
	}
	if !strings.Contains(createErr.Error(), "condition zone: ") {
		t.Errorf("refusal does not name the condition: %v", createErr)
	}
	for name, tc := range typedExpressions {
		t.Run(name, func(t *testing.T) {
			err := c.Create(ctx, withZone(uniq("typed"), tc.expr), client.DryRunAll)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("valid expression refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), "spec.permit.conditions[1].expression") || !strings.Contains(err.Error(), "condition zone: ") || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want one naming the condition and containing %q", err, tc.wantErr)
			}
		})
	}
	good := withZone("good", `node.metadata.labels[?'zone'].orValue('') == 'a'`)
	if err := c.Create(ctx, good); err != nil {
		t.Fatalf("valid policy refused: %v", err)
	}
	good.Spec.Permit.Conditions[1].Expression = `node.metadata.labels[`
	if err := c.Update(ctx, good); err == nil || !strings.Contains(err.Error(), "spec.permit.conditions[1].expression") {
		t.Errorf("update to an invalid expression: err = %v", err)
	}
}
