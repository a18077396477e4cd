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

// Package gang is the gang permit condition: the pods of a group are placed
// all-or-nothing in one scheduling cycle before any of them is bound,
// optionally inside one topology domain (a rack, a block, a zone).
//
// The group step (Coordinator.Reserve) runs before the pod's own Reserve,
// through a Handle the scheduler provides; the permit plugin (Permit) then
// approves a member that holds a reservation, naming where its gang was
// placed.
package gang

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
)

// Spec is a pod's gang as its policy's gang condition and its labels say.
type Spec struct {
	// Condition is the name of the policy's gang condition.
	Condition string
	// Group is the value of the pod's group label.
	Group string
	// MinMember is how many members are placed together.
	MinMember int
	// Levels are the topology's node label keys, widest first; empty
	// without topology.
	Levels []string
	// Required never splits the gang across domains of the widest level.
	Required bool
	// PodGroup is set for a member of an upstream PodGroup
	// (spec.schedulingGroup.podGroupName; Group is then that name): the
	// members are the pods that name it.
	PodGroup bool
}

// Of returns the gang the pod belongs to under policy: its group label and
// the policy's gang condition (the group's min-member annotation overrides
// the condition's minMember).
func Of(policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod) (Spec, bool) {
	if policy == nil || policy.Spec.Permit == nil {
		return Spec{}, false
	}
	group := pod.Labels[bindgatev1alpha1.GroupLabel]
	if group == "" {
		return Spec{}, false
	}
	for _, c := range policy.Spec.Permit.Conditions {
		if c.Gang == nil {
			continue
		}
		s := Spec{Condition: c.Name, Group: group, MinMember: int(c.Gang.MinMember)}
		if v, err := strconv.Atoi(pod.Annotations[bindgatev1alpha1.MinMemberAnnotation]); err == nil && v >= 1 {
			s.MinMember = v
		}
		if t := c.Gang.Topology; t != nil {
			s.Levels = t.LevelKeys()
			s.Required = t.Mode != bindgatev1alpha1.GangTopologyPreferred
		}
		return s, true
	}
	return Spec{}, false
}

// Domain is one topology domain: the nodes whose labels Keys (the
// topology's levels, widest first, down to the domain's level) have the
// values Values. A rack is told apart by its zone too: rack r1 of zone z1 is
// not rack r1 of zone z2.
type Domain struct {
	Keys, Values []string
	Nodes        sets.Set[string]
}

// Key is the label of the domain's level.
func (d Domain) Key() string {
	if len(d.Keys) == 0 {
		return ""
	}
	return d.Keys[len(d.Keys)-1]
}

// Contains says whether node is in the domain.
func (d Domain) Contains(n *corev1.Node) bool {
	for i, k := range d.Keys {
		if v, ok := n.Labels[k]; !ok || v != d.Values[i] {
			return false
		}
	}
	return len(d.Keys) > 0
}

func (d Domain) String() string {
	parts := make([]string, len(d.Keys))
	for i := range d.Keys {
		parts[i] = d.Keys[i] + "=" + d.Values[i]
	}
	return strings.Join(parts, ",")
}

// Domains groups nodes into the domains of level (an index into levels,
// widest first), in order of size (fewest nodes first, so that a gang takes
// the tightest domain that holds it), then name. Nodes without one of the
// labels are in no domain of that level.
func Domains(nodes []*corev1.Node, levels []string, level int) []Domain {
	keys := levels[:level+1]
	by := map[string]*Domain{}
	for _, n := range nodes {
		values := make([]string, len(keys))
		ok := true
		for i, k := range keys {
			values[i] = n.Labels[k]
			ok = ok && values[i] != ""
		}
		if !ok {
			continue
		}
		id := strings.Join(values, "\x00")
		d := by[id]
		if d == nil {
			d = &Domain{Keys: keys, Values: values, Nodes: sets.New[string]()}
			by[id] = d
		}
		d.Nodes.Insert(n.Name)
	}
	out := make([]Domain, 0, len(by))
	for _, d := range by {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Nodes.Len() != out[j].Nodes.Len() {
			return out[i].Nodes.Len() < out[j].Nodes.Len()
		}
		return out[i].String() < out[j].String()
	})
	return out
}

// Shared returns the narrowest domain (of levels, widest first) that
// every one of the nodes is in, or false when they share none. The
// domain's Nodes are not filled in.
func Shared(nodes []*corev1.Node, levels []string) (Domain, bool) {
	if len(nodes) == 0 {
		return Domain{}, false
	}
	for l := len(levels) - 1; l >= 0; l-- {
		d := Domain{Keys: levels[:l+1], Values: make([]string, l+1)}
		for i, k := range d.Keys {
			d.Values[i] = nodes[0].Labels[k]
		}
		same := true
		for _, n := range nodes {
			same = same && d.Contains(n)
		}
		if same {
			return d, true
		}
	}
	return Domain{}, false
}

// Placement says where a gang was placed: in one domain, or (Preferred
// topology that no domain could hold) spread.
type Placement struct {
	Domain Domain
	// Spread is set when the gang spans domains.
	Spread bool
}

// Level is the label key of the placement's domain ("" when spread or
// without topology): the metric's label.
func (p Placement) Level() string {
	if p.Spread {
		return ""
	}
	return p.Domain.Key()
}

func (p Placement) String() string {
	switch {
	case p.Spread:
		return "spread over domains (no domain holds every member)"
	case p.Domain.Key() == "":
		return ""
	default:
		return "in " + p.Domain.String()
	}
}

// Permit is the permit plugin of a gang condition. Its members are placed
// all-or-nothing before Permit (Coordinator.Reserve), so a member that holds
// a reservation belongs to a placed gang: it approves, saying where the gang
// was placed when it has a topology.
type Permit struct {
	name   string
	placed func(pod *corev1.Pod) (Placement, bool)
}

// PodGroupIndex is the pod cache's field index of
// spec.schedulingGroup.podGroupName.
const PodGroupIndex = "spec.schedulingGroup.podGroupName"

// PodGroupCondition names the gang of an upstream PodGroup in a member's
// Permitted condition ("gang: gang train: 2/3 members exist, ..."), as a
// policy's gang condition is named by the policy.
const PodGroupCondition = "gang"

// PodGroupName returns the PodGroup a pod names, or "".
func PodGroupName(pod *corev1.Pod) string {
	if g := pod.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		return *g.PodGroupName
	}
	return ""
}

// groupOf is the gang key of a pod: its PodGroup, else its group label.
func groupOf(pod *corev1.Pod) string {
	if n := PodGroupName(pod); n != "" {
		return n
	}
	return pod.Labels[bindgatev1alpha1.GroupLabel]
}

var _ framework.PermitPlugin = Permit{}

// NewPermit returns the permit plugin of the gang condition name; c (may be
// nil) tells where gangs were placed.
func NewPermit(name string, c *Coordinator) Permit {
	p := Permit{name: name}
	if c != nil {
		p.placed = c.placement
	}
	return p
}

// Name is the condition's name.
func (g Permit) Name() string { return g.name }

// Permit approves: the gang was reserved together.
func (g Permit) Permit(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, _ *corev1.Node) (*framework.Status, time.Duration) {
	if g.placed != nil {
		if p, ok := g.placed(pod); ok && p.String() != "" {
			return framework.NewStatus(framework.Success, fmt.Sprintf("gang %s placed %s", groupOf(pod), p)), 0
		}
	}
	return nil, 0
}

// levelsText names the levels for messages: "example.com/rack or zone".
func levelsText(levels []string) string {
	rev := make([]string, 0, len(levels))
	for i := len(levels) - 1; i >= 0; i-- {
		rev = append(rev, levels[i])
	}
	return strings.Join(rev, " or ")
}
