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

package explain

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/dryrun"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/placement"
	"github.com/bindgate/bindgate/internal/policy"
)

// Outcomes of a simulated pod.
const (
	// OutcomeBind: the policy would reserve the pod on Node and bind it.
	OutcomeBind = string(bindgatev1alpha1.DryRunBind)
	// OutcomeWait: the policy would reserve the pod on Node and wait for
	// permit conditions.
	OutcomeWait = string(bindgatev1alpha1.DryRunWait)
	// OutcomeRefuse: a permit condition would reject the pod.
	OutcomeRefuse = string(bindgatev1alpha1.DryRunRefuse)
	// OutcomeUnschedulable: no node would take the pod.
	OutcomeUnschedulable = string(bindgatev1alpha1.DryRunUnschedulable)
	// OutcomeNotTaken: the policy selects the pod, but another policy
	// would still take it.
	OutcomeNotTaken = "NotTaken"
)

// Simulation is what a policy that is not applied would do.
type Simulation struct {
	Policy string `json:"policy"`
	// Replaces is true when a policy of that name exists: the simulation
	// is of the edit.
	Replaces bool `json:"replaces"`
	// Pods are the pending pods the policy selects (or the one given),
	// in the order the operator would take them.
	Pods []PodOutcome `json:"pods"`
	// Summary counts the pods per outcome.
	Summary map[string]int `json:"summary"`
	Notes   []string       `json:"notes,omitempty"`
}

// PodOutcome is one pod's would-be outcome.
type PodOutcome struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Outcome   string `json:"outcome"`
	Node      string `json:"node,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Now is the policy that takes the pod today ("" when none does).
	Now string `json:"now,omitempty"`
	// DependsOnOrder: the pod is unschedulable only because pods simulated
	// before it took the room; the operator, which takes pods it wakes
	// together in no fixed order, may place it and refuse another.
	DependsOnOrder bool `json:"dependsOnOrder,omitempty"`
	// TiedWith are the other nodes with Node's score: the operator, as
	// kube-scheduler, may choose any of them.
	TiedWith []string `json:"tiedWith,omitempty"`
}

// DecodePolicy reads a BindingPolicy manifest, refusing unknown fields.
func DecodePolicy(data []byte) (*bindgatev1alpha1.BindingPolicy, error) {
	p := &bindgatev1alpha1.BindingPolicy{}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		return nil, fmt.Errorf("decoding the BindingPolicy: %w", err)
	}
	if p.Kind != "BindingPolicy" || p.APIVersion != bindgatev1alpha1.GroupVersion.String() {
		return nil, fmt.Errorf("the manifest is a %s %s, not a %s BindingPolicy", p.APIVersion, p.Kind, bindgatev1alpha1.GroupVersion)
	}
	if p.Name == "" {
		return nil, fmt.Errorf("the BindingPolicy has no metadata.name")
	}
	return p, nil
}

// DecodePod reads a Pod manifest; its namespace defaults to ns.
func DecodePod(data []byte, ns string) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		return nil, fmt.Errorf("decoding the Pod: %w", err)
	}
	if p.Kind != "Pod" {
		return nil, fmt.Errorf("the manifest is a %s, not a Pod", p.Kind)
	}
	if p.Namespace == "" {
		p.Namespace = ns
	}
	if p.Name == "" {
		return nil, fmt.Errorf("the Pod has no metadata.name")
	}
	return p, nil
}

// Simulate evaluates pol, not applied, over the pending pods it selects
// (or over pod alone when pod is not nil), as the operator would once pol
// is applied: matched among the applied policies (pol replacing the one of
// its name), placed in the operator's order, each placed pod counted on its
// node for the next, and permit expressions evaluated on the chosen node.
// The API server validates and defaults pol in a dry run; nothing is
// written.
func Simulate(ctx context.Context, opts Options, pol *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod) (*Simulation, error) {
	sim := &Simulation{Policy: pol.Name, Summary: map[string]int{}}
	pol, note, err := admit(ctx, opts.Client, pol, &sim.Replaces)
	if err != nil {
		return nil, err
	}
	if note != "" {
		sim.Notes = append(sim.Notes, note)
	}
	if pol.UID == "" {
		// The permit plugins are cached per policy UID and generation.
		pol.UID = uuid.NewUUID()
	}
	if errs := (policy.Validator{}).Validate(pol); len(errs) > 0 {
		return nil, fmt.Errorf("the BindingPolicy would be refused: %w", errs.ToAggregate())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := load(ctx, opts)
	if err != nil {
		return nil, err
	}
	sim.Notes = append(sim.Notes, s.notes...)
	withNew := make([]bindgatev1alpha1.BindingPolicy, 0, len(s.policies)+1)
	for _, p := range s.policies {
		if p.Name != pol.Name {
			withNew = append(withNew, p)
		}
	}
	if policy.IsDryRun(pol) {
		sim.Notes = append(sim.Notes, "the policy is in DryRun mode: simulated as if it were switched to Enforce")
		pol.Spec.Mode = bindgatev1alpha1.ModeEnforce
	}
	withNew = append(withNew, *pol)

	var pods []*corev1.Pod
	if pod != nil {
		if pod.UID == "" {
			pod.UID = types.UID("simulated-" + pod.Namespace + "-" + pod.Name)
		}
		pods = append(pods, pod)
	} else {
		for _, p := range s.pods {
			if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && (bind.HasGate(p) || p.Spec.SchedulerName == bindgatev1alpha1.SchedulerName) &&
				policy.Selects(pol, p, s.namespaces[p.Namespace]) {
				pods = append(pods, p)
			}
		}
	}
	// The operator's order: pod priority, then creation time.
	sort.SliceStable(pods, func(i, j int) bool {
		pi, pj := podPriority(pods[i]), podPriority(pods[j])
		if pi != pj {
			return pi > pj
		}
		if !pods[i].CreationTimestamp.Equal(&pods[j].CreationTimestamp) {
			return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
		}
		return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name
	})
	for _, p := range pods {
		out, err := s.simulatePod(ctx, p, pol, withNew)
		if err != nil {
			return nil, err
		}
		sim.Pods = append(sim.Pods, out)
		sim.Summary[out.Outcome]++
	}
	return sim, nil
}

// admit has the API server validate and default pol in a dry run (create,
// or update of the policy of the same name). Without the right to, the
// policy is used as written, with a note.
func admit(ctx context.Context, c client.Client, pol *bindgatev1alpha1.BindingPolicy, replaces *bool) (*bindgatev1alpha1.BindingPolicy, string, error) {
	p := pol.DeepCopy()
	p.ResourceVersion, p.UID = "", ""
	existing := &bindgatev1alpha1.BindingPolicy{}
	err := c.Get(ctx, types.NamespacedName{Name: p.Name}, existing)
	switch {
	case err == nil:
		*replaces = true
		existing.Spec = p.Spec
		existing.Labels, existing.Annotations = p.Labels, p.Annotations
		p = existing
		err = c.Update(ctx, p, client.DryRunAll)
	case apierrors.IsNotFound(err):
		err = c.Create(ctx, p, client.DryRunAll)
	}
	switch {
	case err == nil:
		return p, "", nil
	case apierrors.IsForbidden(err):
		return pol, fmt.Sprintf("the API server could not check the policy in a dry run (%v): it is used as written, without the schema's defaults", err), nil
	default:
		return nil, "", fmt.Errorf("the API server would refuse the BindingPolicy: %w", err)
	}
}

func podPriority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// simulatePod is one pod's would-be outcome; a pod that would be reserved
// is counted on its node for the pods after it.
func (s *state) simulatePod(ctx context.Context, pod *corev1.Pod, pol *bindgatev1alpha1.BindingPolicy, policies []bindgatev1alpha1.BindingPolicy) (PodOutcome, error) {
	out := PodOutcome{Namespace: pod.Namespace, Name: pod.Name}
	nsLabels := s.namespaces[pod.Namespace]
	if now, _, _ := policy.Match(pod, nsLabels, s.policies); now != nil {
		out.Now = now.Name
	}
	chosen, _, why := policy.Match(pod, nsLabels, policies)
	if chosen == nil || chosen.Name != pol.Name {
		out.Outcome = OutcomeNotTaken
		if chosen != nil {
			out.Reason = fmt.Sprintf("BindingPolicy %s (priority %d) would take it", chosen.Name, chosen.Spec.Priority)
		} else {
			out.Reason = why
		}
		return out, nil
	}
	ev, err := s.evaluate(ctx, pod, pol)
	if err != nil {
		return out, fmt.Errorf("placing pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	dec := dryrun.Decide(ctx, ev, pol, pod, func(name string) *corev1.Node { return s.nodes[name] })
	out.Outcome, out.Node, out.Reason, out.TiedWith = string(dec.Outcome), dec.Node, dec.Reason, dec.TiedWith
	switch dec.Outcome {
	case bindgatev1alpha1.DryRunUnschedulable:
		if len(s.assumed) > 0 {
			alone, err := s.evaluateAlone(ctx, pod, pol)
			if err != nil {
				return out, err
			}
			out.DependsOnOrder = len(alone.Scores) > 0
		}
		return out, nil
	case bindgatev1alpha1.DryRunRefuse:
		return out, nil
	}
	if err := s.assume(pod, out.Node, pol); err != nil {
		return out, fmt.Errorf("counting pod %s/%s on node %s: %w", pod.Namespace, pod.Name, out.Node, err)
	}
	return out, nil
}

// assume reserves pod on node in the cache: later evaluations see it there.
func (s *state) assume(pod *corev1.Pod, node string, pol *bindgatev1alpha1.BindingPolicy) error {
	s.placer.Lock()
	defer s.placer.Unlock()
	if _, ok := s.recorded[pod.UID]; ok {
		s.cache.Unreserve(pod.UID, false)
		delete(s.recorded, pod.UID)
	}
	if err := s.cache.Reserve(pod, framework.PodRequests(pod), node, pol, s.opts.Clock.Now()); err != nil {
		return err
	}
	s.assumed = append(s.assumed, assumed{pod: pod, node: node, policy: pol})
	return nil
}

// assumed is a pod the simulation placed.
type assumed struct {
	pod    *corev1.Pod
	node   string
	policy *bindgatev1alpha1.BindingPolicy
}

// evaluateAlone evaluates pod as if none of the simulated pods were placed.
func (s *state) evaluateAlone(ctx context.Context, pod *corev1.Pod, pol *bindgatev1alpha1.BindingPolicy) (*placement.Evaluation, error) {
	s.placer.Lock()
	for _, a := range s.assumed {
		s.cache.Unreserve(a.pod.UID, false)
	}
	s.placer.Unlock()
	ev, err := s.evaluate(ctx, pod, pol)
	s.placer.Lock()
	defer s.placer.Unlock()
	for _, a := range s.assumed {
		if rerr := s.cache.Reserve(a.pod, framework.PodRequests(a.pod), a.node, a.policy, s.opts.Clock.Now()); rerr != nil && err == nil {
			err = fmt.Errorf("counting pod %s/%s on node %s again: %w", a.pod.Namespace, a.pod.Name, a.node, rerr)
		}
	}
	return ev, err
}
