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

// Package dryrun records what DryRun policies would do. A DryRun policy
// takes no pod (internal/policy leaves it out of matching); for each pod it
// would take were it enforced, the Recorder runs the same placement plugins
// (nothing reserved) and permit expressions, and records the would-be
// decision once per pod and policy: an event on the pod (Normal, DryRun),
// the counter bindgate_dry_run_decisions_total{policy,outcome}, and the
// policy's status.dryRun (counts and the latest decisions), written in
// batches.
package dryrun

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/metrics"
	"github.com/bindgate/bindgate/internal/permit"
	"github.com/bindgate/bindgate/internal/placement"
	"github.com/bindgate/bindgate/internal/policy"
)

// EventDryRun is the reason of the event a pod gets for each DryRun
// policy's decision about it.
const EventDryRun = "DryRun"

// Decision is what a policy would do with a pod.
type Decision struct {
	Outcome bindgatev1alpha1.DryRunOutcome
	Node    string
	Reason  string
	// TiedWith are the other nodes with Node's score (any of them could
	// be chosen, as kube-scheduler chooses among ties).
	TiedWith []string
}

// Decide turns the placement plugins' verdicts into the policy's would-be
// decision: the best-scored node, then the permit conditions there
// (expressions evaluated with the operator's code; gang, volumes and
// webhook conditions reported as waits, decided only once enforced).
func Decide(ctx context.Context, ev *placement.Evaluation, pol *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod, node func(string) *corev1.Node) Decision {
	if len(ev.Scores) == 0 {
		return Decision{Outcome: bindgatev1alpha1.DryRunUnschedulable, Reason: FitMessage(ev)}
	}
	d := Decision{Outcome: bindgatev1alpha1.DryRunBind, Node: ev.Scores[0].Name}
	for _, s := range ev.Scores[1:] {
		if s.TotalScore == ev.Scores[0].TotalScore {
			d.TiedWith = append(d.TiedWith, s.Name)
		}
	}
	var pending []string
	for _, p := range permit.PluginsFor(pol) {
		kind, expr := conditionKind(pol, p.Name())
		if !expr {
			pending = append(pending, fmt.Sprintf("%s: a %s condition, decided only once the policy is enforced", p.Name(), kind))
			continue
		}
		st, _ := p.Permit(ctx, framework.NewCycleState(pol, pod), pod, node(d.Node))
		switch {
		case st.IsSuccess():
		case st.IsWait():
			pending = append(pending, fmt.Sprintf("%s: %s", p.Name(), st.Message()))
		default:
			d.Outcome = bindgatev1alpha1.DryRunRefuse
			d.Reason = fmt.Sprintf("rejected by permit condition %s: %s", p.Name(), st.Message())
			return d
		}
	}
	if len(pending) > 0 {
		d.Outcome = bindgatev1alpha1.DryRunWait
		d.Reason = strings.Join(pending, "; ")
	}
	return d
}

func conditionKind(pol *bindgatev1alpha1.BindingPolicy, name string) (string, bool) {
	if pol.Spec.Permit != nil {
		for _, c := range pol.Spec.Permit.Conditions {
			if c.Name != name {
				continue
			}
			switch {
			case c.Expression != "":
				return "expression", true
			case c.Gang != nil:
				return "gang", false
			case c.Volumes != nil:
				return "volumes", false
			case c.Webhook != nil:
				return "webhook", false
			}
		}
	}
	return "permit", false
}

// FitMessage is kube-scheduler's message for a pod no node takes: each
// refusal reason with the number of nodes it refused.
func FitMessage(ev *placement.Evaluation) string {
	counts := map[string]int{}
	for _, st := range ev.Refused {
		for _, r := range st.Reasons() {
			counts[r]++
		}
	}
	parts := make([]string, 0, len(counts))
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return fmt.Sprintf("0/%d nodes are available: %s.", ev.NumNodes, strings.Join(parts, ", "))
}

// Recorder records DryRun policies' decisions. Create one per process and
// add it to the manager (it flushes status.dryRun).
type Recorder struct {
	// Client writes status.dryRun; Reader reads the policy fresh before.
	Client client.Client
	Reader client.Reader
	Placer *placement.Placer
	// Node returns a node from the placement cache.
	Node   func(string) (*corev1.Node, bool)
	Events events.EventRecorder
	Clock  clock.PassiveClock
	// FlushEvery is how often status.dryRun is written (default 1s).
	FlushEvery time.Duration

	mu      sync.Mutex
	decided map[types.UID]*decided
	pending map[string]*bindgatev1alpha1.DryRunStatus
}

// Observe records, once per pod and policy, the decision of each DryRun
// policy that would take pod were it enforced. takenBy is the policy that
// takes the pod ("" when none does).
func (r *Recorder) Observe(ctx context.Context, pod *corev1.Pod, takenBy string) {
	log := ctrl.LoggerFrom(ctx)
	var policies bindgatev1alpha1.BindingPolicyList
	// Read-only use: skip the deep copy of every policy (and its status).
	if err := r.Client.List(ctx, &policies, client.UnsafeDisableDeepCopy); err != nil {
		log.Error(err, "Listing BindingPolicies for DryRun decisions")
		return
	}
	if !slices.ContainsFunc(policies.Items, func(p bindgatev1alpha1.BindingPolicy) bool { return policy.IsDryRun(&p) }) {
		return
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); err != nil {
		log.Error(err, "Reading the pod's namespace for DryRun decisions", "pod", klog.KObj(pod))
		return
	}
	takers := policy.DryRunTakers(pod, ns.Labels, policies.Items)
	for _, d := range takers {
		if r.isDecided(pod.UID, d.Name) {
			continue
		}
		pol := d.DeepCopy()
		pol.Spec.Mode = bindgatev1alpha1.ModeEnforce
		r.Placer.Lock()
		ev, err := r.Placer.Evaluate(ctx, pod, pol)
		r.Placer.Unlock()
		if err != nil {
			log.Error(err, "Evaluating a DryRun policy", "pod", klog.KObj(pod), "policy", d.Name)
			continue
		}
		dec := Decide(ctx, ev, pol, pod, func(name string) *corev1.Node { n, _ := r.Node(name); return n })
		r.record(pod, d.Name, dec, takenBy)
	}
}

// prune forgets the pods that are gone.
func (r *Recorder) prune(ctx context.Context) {
	r.mu.Lock()
	pods := make(map[types.UID]types.NamespacedName, len(r.decided))
	for uid, d := range r.decided {
		pods[uid] = d.pod
	}
	r.mu.Unlock()
	for uid, key := range pods {
		pod := &corev1.Pod{}
		err := r.Client.Get(ctx, key, pod)
		if apierrors.IsNotFound(err) || (err == nil && pod.UID != uid) {
			r.mu.Lock()
			delete(r.decided, uid)
			r.mu.Unlock()
		}
	}
}

// decided are the policies that decided about one pod.
type decided struct {
	pod      types.NamespacedName
	policies map[string]bool
}

func (r *Recorder) isDecided(uid types.UID, pol string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.decided[uid]
	return d != nil && d.policies[pol]
}

func (r *Recorder) record(pod *corev1.Pod, pol string, dec Decision, takenBy string) {
	r.mu.Lock()
	if r.decided == nil {
		r.decided = map[types.UID]*decided{}
	}
	if r.pending == nil {
		r.pending = map[string]*bindgatev1alpha1.DryRunStatus{}
	}
	if r.decided[pod.UID] == nil {
		r.decided[pod.UID] = &decided{pod: client.ObjectKeyFromObject(pod), policies: map[string]bool{}}
	}
	r.decided[pod.UID].policies[pol] = true
	p := r.pending[pol]
	if p == nil {
		p = &bindgatev1alpha1.DryRunStatus{}
		r.pending[pol] = p
	}
	count(p, dec.Outcome, 1)
	p.Recent = append([]bindgatev1alpha1.DryRunDecision{{
		PodNamespace: pod.Namespace, PodName: pod.Name, Outcome: dec.Outcome, Node: dec.Node,
		Reason: truncate(dec.Reason, 1024), TakenBy: takenBy, DecidedAt: metav1.NewTime(r.Clock.Now()),
	}}, p.Recent...)
	if len(p.Recent) > bindgatev1alpha1.MaxDryRunExamples {
		p.Recent = p.Recent[:bindgatev1alpha1.MaxDryRunExamples]
	}
	r.mu.Unlock()

	metrics.DryRunDecisions.WithLabelValues(pol, string(dec.Outcome)).Inc()
	r.Events.Eventf(pod, nil, corev1.EventTypeNormal, EventDryRun, "DryRun", "%s", Note(pol, dec, takenBy))
}

// Note is the event text of a decision.
func Note(pol string, dec Decision, takenBy string) string {
	var what string
	switch dec.Outcome {
	case bindgatev1alpha1.DryRunBind:
		what = "would bind the pod to node " + dec.Node
	case bindgatev1alpha1.DryRunWait:
		what = fmt.Sprintf("would reserve node %s and wait for permit conditions: %s", dec.Node, dec.Reason)
	case bindgatev1alpha1.DryRunRefuse:
		what = "would refuse the pod: " + dec.Reason
	default:
		what = "would leave the pod unschedulable: " + dec.Reason
	}
	instead := "no policy takes it"
	if takenBy != "" {
		instead = "BindingPolicy " + takenBy + " takes it"
	}
	return fmt.Sprintf("BindingPolicy %s (DryRun) %s; %s", pol, strings.TrimSuffix(what, "."), instead)
}

func count(s *bindgatev1alpha1.DryRunStatus, o bindgatev1alpha1.DryRunOutcome, n int32) {
	switch o {
	case bindgatev1alpha1.DryRunBind:
		s.Bind += n
	case bindgatev1alpha1.DryRunWait:
		s.Wait += n
	case bindgatev1alpha1.DryRunRefuse:
		s.Refuse += n
	case bindgatev1alpha1.DryRunUnschedulable:
		s.Unschedulable += n
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// NeedLeaderElection is true: decisions are made by the cycle's leader.
func (r *Recorder) NeedLeaderElection() bool { return true }

// Start writes the pending decisions into the policies' status every
// FlushEvery until ctx ends.
func (r *Recorder) Start(ctx context.Context) error {
	every := r.FlushEvery
	if every <= 0 {
		every = time.Second
	}
	go wait.UntilWithContext(ctx, r.prune, time.Minute)
	wait.UntilWithContext(ctx, r.Flush, every)
	return nil
}

// Flush writes the pending decisions now.
func (r *Recorder) Flush(ctx context.Context) {
	r.mu.Lock()
	pending := r.pending
	r.pending = map[string]*bindgatev1alpha1.DryRunStatus{}
	r.mu.Unlock()
	for name, add := range pending {
		if err := r.write(ctx, name, add); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Writing DryRun decisions", "policy", name)
			r.mu.Lock()
			if cur := r.pending[name]; cur != nil {
				merge(add, cur)
			}
			r.pending[name] = add
			r.mu.Unlock()
		}
	}
}

// merge adds newer's counts and decisions to s (newer's first).
func merge(s, newer *bindgatev1alpha1.DryRunStatus) {
	count(s, bindgatev1alpha1.DryRunBind, newer.Bind)
	count(s, bindgatev1alpha1.DryRunWait, newer.Wait)
	count(s, bindgatev1alpha1.DryRunRefuse, newer.Refuse)
	count(s, bindgatev1alpha1.DryRunUnschedulable, newer.Unschedulable)
	s.Recent = append(append([]bindgatev1alpha1.DryRunDecision{}, newer.Recent...), s.Recent...)
	if len(s.Recent) > bindgatev1alpha1.MaxDryRunExamples {
		s.Recent = s.Recent[:bindgatev1alpha1.MaxDryRunExamples]
	}
}

// write adds add to the policy's status.dryRun under optimistic locking.
// A policy that is gone or no longer DryRun drops it.
func (r *Recorder) write(ctx context.Context, name string, add *bindgatev1alpha1.DryRunStatus) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		p := &bindgatev1alpha1.BindingPolicy{}
		if err := r.Reader.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return client.IgnoreNotFound(err)
		}
		if !policy.IsDryRun(p) {
			return nil
		}
		patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
		next := &bindgatev1alpha1.DryRunStatus{}
		if p.Status.DryRun != nil {
			next = p.Status.DryRun.DeepCopy()
		}
		merge(next, add)
		p.Status.DryRun = next
		err := r.Client.Status().Patch(ctx, p, patch)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}
