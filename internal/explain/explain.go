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
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/gang"
	"github.com/bindgate/bindgate/internal/permit"
	"github.com/bindgate/bindgate/internal/placement"
	"github.com/bindgate/bindgate/internal/policy"
)

// ErrNotHandled means the pod is not one bindgate schedules.
var ErrNotHandled = errors.New("pod does not use bindgate")

// ErrReasonDRA is explain's reason for a pod with resourceClaims: it does
// not simulate the allocation of devices.
const ErrReasonDRA = "pod uses dynamic resource allocation (spec.resourceClaims), which explain does not simulate"

// Pod explains why the pod ns/name is where it is.
func Pod(ctx context.Context, opts Options, ns, name string, eo ExplainOptions) (*Report, error) {
	if eo.Top <= 0 {
		eo.Top = 3
	}
	if eo.Timeline <= 0 {
		eo.Timeline = 12
	}
	pod := &corev1.Pod{}
	if err := opts.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("pod %s/%s not found", ns, name)
		}
		return nil, fmt.Errorf("reading pod %s/%s: %w", ns, name, err)
	}
	if err := handled(pod); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := load(ctx, opts)
	if err != nil {
		return nil, err
	}
	r := &Report{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Notes: s.notes}
	if r.Timeline, err = timeline(ctx, opts.Client, pod, eo.Timeline); err != nil {
		return nil, err
	}
	if pod.Spec.NodeName != "" {
		r.Node = pod.Spec.NodeName
		r.Policy = pod.Annotations[bindgatev1alpha1.PolicyAnnotation]
		r.State = fmt.Sprintf("bound to node %s", pod.Spec.NodeName)
		if r.Policy != "" {
			r.State += " by BindingPolicy " + r.Policy
		}
		return r, nil
	}
	pol := s.match(pod, r)
	if rec, ok := s.recorded[pod.UID]; ok {
		r.Reservation = &Reservation{
			Policy: rec.policy, Node: rec.res.Node, Since: rec.res.ReservedAt.Time, Durable: true,
		}
		if rec.res.PermitDeadline != nil {
			t := rec.res.PermitDeadline.Time
			r.Reservation.PermitDeadline = &t
		}
	}
	if pol == nil {
		return r, nil
	}
	ev, err := s.evaluate(ctx, pod, pol)
	if err != nil {
		return nil, fmt.Errorf("running the placement plugins: %w", err)
	}
	r.Nodes = nodesReport(ev, eo)
	r.Permit = s.permitVerdicts(ctx, pod, pol, r.Reservation)
	r.State = stateLine(pod, r)
	return r, nil
}

// handled refuses a pod bindgate does not schedule, saying why.
func handled(pod *corev1.Pod) error {
	if bind.HasGate(pod) || pod.Spec.SchedulerName == bindgatev1alpha1.SchedulerName {
		return nil
	}
	if pod.Annotations[bindgatev1alpha1.PolicyAnnotation] != "" {
		return nil // bound (or being bound) by bindgate
	}
	sched := pod.Spec.SchedulerName
	if sched == "" {
		sched = corev1.DefaultSchedulerName
	}
	return fmt.Errorf("%w: pod %s/%s has no %s scheduling gate, its spec.schedulerName is %q (not %q), and bindgate did not bind it; "+
		"it is scheduled by %s", ErrNotHandled, pod.Namespace, pod.Name, bindgatev1alpha1.SchedulingGate, sched,
		bindgatev1alpha1.SchedulerName, sched)
}

// match fills r.Policies and r.Policy as internal/policy matches the pod,
// and returns the policy the operator would place it under (nil: none).
func (s *state) match(pod *corev1.Pod, r *Report) *bindgatev1alpha1.BindingPolicy {
	nsLabels := s.namespaces[pod.Namespace]
	chosen, _, why := policy.Match(pod, nsLabels, s.policies)
	pinned, hasPin := pod.Labels[bindgatev1alpha1.PolicyLabel]
	for i := range s.policies {
		p := &s.policies[i]
		v := PolicyVerdict{Name: p.Name, Priority: p.Spec.Priority}
		switch {
		case chosen != nil && p.Name == chosen.Name:
			v.Takes = true
			v.Reason = "the highest-priority policy that selects the pod"
			if hasPin {
				v.Reason = fmt.Sprintf("named by the pod's label %s, and it selects the pod", bindgatev1alpha1.PolicyLabel)
			}
		case p.DeletionTimestamp != nil:
			v.Reason = "being deleted"
		case policy.IsDryRun(p):
			v.Reason = "in DryRun mode: it takes no pod (status.dryRun and the pod's DryRun events say what it would do)"
		case !policy.SelectorSelects(p.Spec.PodSelector, pod.Labels) && !policy.SelectorSelects(p.Spec.NamespaceSelector, nsLabels):
			v.Reason = fmt.Sprintf("neither its namespaceSelector (namespace %s) nor its podSelector (the pod's labels) selects the pod", pod.Namespace)
		case !policy.SelectorSelects(p.Spec.PodSelector, pod.Labels):
			v.Reason = "its podSelector does not select the pod's labels"
		case !policy.SelectorSelects(p.Spec.NamespaceSelector, nsLabels):
			v.Reason = fmt.Sprintf("its namespaceSelector does not select namespace %s", pod.Namespace)
		case hasPin:
			v.Reason = fmt.Sprintf("the pod's label %s names %s", bindgatev1alpha1.PolicyLabel, pinned)
		case chosen != nil && p.Spec.Priority < chosen.Spec.Priority:
			v.Reason = fmt.Sprintf("selects the pod, but its priority %d is below %s's %d", p.Spec.Priority, chosen.Name, chosen.Spec.Priority)
		case chosen != nil:
			v.Reason = fmt.Sprintf("selects the pod with the same priority as %s, whose name sorts first", chosen.Name)
		default:
			v.Reason = why
		}
		r.Policies = append(r.Policies, v)
	}
	sort.SliceStable(r.Policies, func(i, j int) bool {
		a, b := r.Policies[i], r.Policies[j]
		if a.Takes != b.Takes {
			return a.Takes
		}
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		return a.Name < b.Name
	})
	if chosen == nil {
		r.State = "no policy takes it: " + why
		return nil
	}
	r.Policy = chosen.Name
	if c := readyCondition(chosen); c != nil && c.Status != "True" {
		r.Policies[0].Reason += fmt.Sprintf("; but it is not Ready (%s: %s), so its pods stay gated", c.Reason, c.Message)
	}
	return chosen
}

func readyCondition(p *bindgatev1alpha1.BindingPolicy) *struct{ Status, Reason, Message string } {
	for _, c := range p.Status.Conditions {
		if c.Type == bindgatev1alpha1.ConditionReady {
			return &struct{ Status, Reason, Message string }{string(c.Status), c.Reason, c.Message}
		}
	}
	return nil
}

// nodesReport groups the evaluation's refusals and keeps the top scores.
func nodesReport(ev *placement.Evaluation, eo ExplainOptions) *Nodes {
	n := &Nodes{Total: ev.NumNodes, Feasible: len(ev.Scores)}
	type key struct{ plugin, reason string }
	groups := map[key][]string{}
	for node, st := range ev.Refused {
		k := key{st.Plugin(), statusMessage(st)}
		groups[k] = append(groups[k], node)
		if eo.AllNodes {
			n.Refused = append(n.Refused, NodeVerdict{Node: node, Plugin: k.plugin, Reason: k.reason})
		}
	}
	for k, nodes := range groups {
		sort.Strings(nodes)
		n.Reasons = append(n.Reasons, ReasonCount{Plugin: k.plugin, Reason: k.reason, Count: len(nodes), Nodes: nodes})
	}
	sort.Slice(n.Reasons, func(i, j int) bool {
		a, b := n.Reasons[i], n.Reasons[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Plugin+a.Reason < b.Plugin+b.Reason
	})
	sort.Slice(n.Refused, func(i, j int) bool { return n.Refused[i].Node < n.Refused[j].Node })
	for i, s := range ev.Scores {
		if i == eo.Top {
			break
		}
		ns := NodeScore{Node: s.Name, Total: s.TotalScore}
		for _, ps := range s.Scores {
			pct := 0.0
			if s.TotalScore > 0 {
				pct = float64(int64(float64(ps.Score)*1000/float64(s.TotalScore))) / 10
			}
			ns.Plugins = append(ns.Plugins, PluginScore{Plugin: ps.Name, Score: ps.Score, Percent: pct})
		}
		sort.SliceStable(ns.Plugins, func(i, j int) bool { return ns.Plugins[i].Score > ns.Plugins[j].Score })
		n.Top = append(n.Top, ns)
	}
	return n
}

func statusMessage(st *fwk.Status) string {
	return strings.Join(st.Reasons(), ", ")
}

// permitVerdicts evaluates the policy's permit conditions for the pod on
// its reserved node: expressions are evaluated here, with the operator's
// code; the other kinds (gang, volumes, webhook) are reported as the
// operator last reported them on the pod's Permitted condition. Without a
// reservation nothing is evaluated, but a gang member's reported wait is
// kept: a gang's members are reserved together, so a member waits for its
// gang holding none.
func (s *state) permitVerdicts(ctx context.Context, pod *corev1.Pod, pol *bindgatev1alpha1.BindingPolicy, res *Reservation) []ConditionVerdict {
	pending := map[string]string{}
	var cond *corev1.PodCondition
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == bindgatev1alpha1.PodConditionPermitted {
			cond = &pod.Status.Conditions[i]
		}
	}
	if cond != nil && cond.Status == corev1.ConditionFalse {
		for _, part := range strings.Split(cond.Message, "; ") {
			if name, msg, ok := strings.Cut(strings.TrimPrefix(part, "rejected by permit condition "), ": "); ok {
				pending[name] = msg
			}
		}
	}
	var node *corev1.Node
	if res != nil && res.Policy == pol.Name {
		node = s.nodes[res.Node]
	}
	// The operator tells a gang's members why they wait only once the
	// gang has waited a second; before that (or after a restart) the
	// gang is counted here, as the operator's gang step counts it.
	if node == nil {
		if spec, ok, err := s.gangOf(ctx, pol, pod); ok {
			if _, reported := pending[spec.Condition]; !reported {
				if msg := s.gangWait(pod, spec, err); msg != "" {
					pending[spec.Condition] = msg
				}
			}
		}
	}
	var out []ConditionVerdict
	// A member of an upstream PodGroup is in its gang whatever the
	// policy's conditions; a policy condition of the same name reports it
	// below.
	if msg, ok := pending[gang.PodGroupCondition]; ok && node == nil && gang.PodGroupName(pod) != "" && !hasCondition(pol, gang.PodGroupCondition) {
		out = append(out, ConditionVerdict{Name: gang.PodGroupCondition, Kind: "podgroup", Verdict: VerdictWaiting, Message: msg})
	}
	if pol.Spec.Permit == nil {
		return out
	}
	plugins := map[string]framework.PermitPlugin{}
	for _, p := range permit.PluginsFor(pol) {
		plugins[p.Name()] = p
	}
	for _, c := range pol.Spec.Permit.Conditions {
		v := ConditionVerdict{Name: c.Name, Kind: kind(c)}
		msg, isPending := pending[c.Name]
		switch {
		case c.Gang != nil && node == nil && isPending:
			// A gang's members are reserved together: a member waits for
			// its gang without a reservation of its own.
			v.Verdict, v.Message = VerdictWaiting, msg
			if cond != nil && cond.Reason == bindgatev1alpha1.ReasonRejected {
				v.Verdict = VerdictRejected
			}
		case node == nil:
			v.Verdict = VerdictNotEvaluated
			v.Message = "the pod holds no reservation under this policy: conditions are evaluated once it is reserved on a node"
		case c.Expression != "":
			st, _ := plugins[c.Name].Permit(ctx, framework.NewCycleState(pol, pod), pod, node)
			switch {
			case st.IsSuccess():
				v.Verdict = VerdictApproved
			case st.IsWait():
				v.Verdict, v.Message = VerdictWaiting, st.Message()
			default:
				v.Verdict, v.Message = VerdictRejected, st.Message()
			}
		default:
			switch {
			case isPending && cond.Reason == bindgatev1alpha1.ReasonRejected:
				v.Verdict, v.Message = VerdictRejected, msg
			case isPending:
				v.Verdict, v.Message = VerdictWaiting, msg
			case cond != nil:
				v.Verdict = VerdictApproved
				v.Message = "not among the conditions the operator last reported pending"
			default:
				v.Verdict = VerdictNotEvaluated
				v.Message = "the operator has not reported on it yet"
			}
		}
		out = append(out, v)
	}
	return out
}

// gangOf returns the pod's gang as the operator's gang step finds it
// (gang.Lookup); err is gang.ErrPodGroupMissing for a PodGroup not created
// yet. Without PodGroups served, the operator ignores the name.
func (s *state) gangOf(ctx context.Context, pol *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod) (gang.Spec, bool, error) {
	spec, ok, err := gang.Lookup(ctx, s.opts.Client, pol, pod, true)
	switch {
	case meta.IsNoMatchError(err):
		return gang.Lookup(ctx, s.opts.Client, pol, pod, false)
	case err != nil && !errors.Is(err, gang.ErrPodGroupMissing):
		return gang.Spec{}, false, err
	}
	return spec, ok, err
}

// gangWait counts the gang spec of pod as the operator's gang step does
// (gang.Role) and returns the wait the operator reports on its members,
// or "" when the gang has its minimum (it is placed together in the
// operator's next cycle).
func (s *state) gangWait(pod *corev1.Pod, spec gang.Spec, err error) string {
	if err != nil {
		return gang.WaitMessage(spec, 0, err)
	}
	n := 0
	for _, m := range s.pods {
		if m.Namespace != pod.Namespace || spec.PodGroup && gang.PodGroupName(m) != spec.Group ||
			!spec.PodGroup && m.Labels[bindgatev1alpha1.GroupLabel] != spec.Group {
			continue
		}
		_, reserved := s.recorded[m.UID]
		if placed, waiting := gang.Role(pod, m, reserved); placed || waiting {
			n++
		}
	}
	if n >= spec.MinMember {
		return ""
	}
	return gang.WaitMessage(spec, n, nil)
}

// hasCondition says whether the policy has a permit condition named name.
func hasCondition(pol *bindgatev1alpha1.BindingPolicy, name string) bool {
	return pol.Spec.Permit != nil && slices.ContainsFunc(pol.Spec.Permit.Conditions, func(c bindgatev1alpha1.PermitCondition) bool {
		return c.Name == name
	})
}

func kind(c bindgatev1alpha1.PermitCondition) string {
	switch {
	case c.Expression != "":
		return "expression"
	case c.Gang != nil:
		return "gang"
	case c.Volumes != nil:
		return "volumes"
	case c.Webhook != nil:
		return "webhook"
	}
	return "unknown"
}

// stateLine sums the pod's situation up.
func stateLine(pod *corev1.Pod, r *Report) string {
	if r.Reservation != nil && r.Reservation.Policy == r.Policy {
		var waiting []string
		for _, v := range r.Permit {
			if v.Verdict != VerdictApproved {
				waiting = append(waiting, v.Name)
			}
		}
		if len(waiting) > 0 {
			return fmt.Sprintf("reserved on node %s, waiting in Permit for %s", r.Reservation.Node, strings.Join(waiting, ", "))
		}
		return fmt.Sprintf("reserved on node %s, every permit condition approves: about to bind", r.Reservation.Node)
	}
	if r.Nodes != nil && r.Nodes.Feasible == 0 {
		return fmt.Sprintf("unschedulable: 0/%d nodes take it under BindingPolicy %s", r.Nodes.Total, r.Policy)
	}
	var waiting []string
	for _, v := range r.Permit {
		if v.Verdict == VerdictWaiting || v.Verdict == VerdictRejected {
			waiting = append(waiting, v.Name)
		}
	}
	if len(waiting) > 0 {
		return fmt.Sprintf("waiting in Permit for %s, no reservation yet", strings.Join(waiting, ", "))
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == bindgatev1alpha1.ReasonStranded {
			return "stranded: " + c.Message
		}
	}
	if r.Nodes != nil && len(r.Nodes.Top) > 0 {
		return fmt.Sprintf("pending: %d/%d nodes take it; the next cycle would choose %s", r.Nodes.Feasible, r.Nodes.Total, r.Nodes.Top[0].Node)
	}
	return "pending"
}

// timeline merges the pod's events and condition changes, oldest first,
// keeping the last n.
func timeline(ctx context.Context, c client.Client, pod *corev1.Pod, n int) ([]TimelineEntry, error) {
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(pod.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the events of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	out := []TimelineEntry{{Time: pod.CreationTimestamp.Time, Source: "condition", Type: "Created", Reason: "Created"}}
	for _, e := range events.Items {
		if e.InvolvedObject.UID != pod.UID {
			continue
		}
		out = append(out, TimelineEntry{
			Time: eventTime(&e), Source: "event", Type: e.Type, Reason: e.Reason, Message: e.Message, Count: eventCount(&e),
		})
	}
	for _, cd := range pod.Status.Conditions {
		out = append(out, TimelineEntry{
			Time: cd.LastTransitionTime.Time, Source: "condition", Type: fmt.Sprintf("%s=%s", cd.Type, cd.Status),
			Reason: cd.Reason, Message: cd.Message,
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	if len(out) > n {
		out = out[len(out)-n:]
	}
	for i := range out {
		out[i].Time = out[i].Time.UTC()
	}
	return out, nil
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

func eventCount(e *corev1.Event) int32 {
	if e.Series != nil {
		return e.Series.Count
	}
	return e.Count
}
