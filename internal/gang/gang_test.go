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

package gang

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

const (
	zone = "topology.kubernetes.io/zone"
	rack = "example.com/rack"
)

func TestDomains(t *testing.T) {
	nodes := []*corev1.Node{
		node("a1", map[string]string{rack: "a"}), node("a2", map[string]string{rack: "a"}), node("a3", map[string]string{rack: "a"}),
		node("b1", map[string]string{rack: "b"}), node("b2", map[string]string{rack: "b"}),
		node("c1", map[string]string{rack: "c"}), node("c2", map[string]string{rack: "c"}),
		node("x", nil), node("empty", map[string]string{rack: ""}),
	}
	got := map[string][]string{}
	var order []string
	for _, d := range Domains(nodes, []string{rack}, 0) {
		order = append(order, d.String())
		got[d.Values[0]] = sortedList(d)
	}
	want := map[string][]string{"a": {"a1", "a2", "a3"}, "b": {"b1", "b2"}, "c": {"c1", "c2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("domains (-want +got):\n%s", diff)
	}
	// Smallest first, then by value: a gang takes the tightest domain.
	if diff := cmp.Diff([]string{rack + "=b", rack + "=c", rack + "=a"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func sortedList(d Domain) []string {
	l := d.Nodes.UnsortedList()
	for i := range l {
		for j := i + 1; j < len(l); j++ {
			if l[j] < l[i] {
				l[i], l[j] = l[j], l[i]
			}
		}
	}
	return l
}

func TestDomainsQualifiedByWiderLevels(t *testing.T) {
	nodes := []*corev1.Node{
		node("z1r1a", map[string]string{zone: "z1", rack: "r1"}), node("z1r1b", map[string]string{zone: "z1", rack: "r1"}),
		node("z2r1", map[string]string{zone: "z2", rack: "r1"}), node("norack", map[string]string{zone: "z2"}),
	}
	got := map[string]int{}
	for _, d := range Domains(nodes, []string{zone, rack}, 1) {
		got[d.String()] = d.Nodes.Len()
	}
	want := map[string]int{zone + "=z1," + rack + "=r1": 2, zone + "=z2," + rack + "=r1": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("racks (-want +got):\n%s", diff)
	}
}

func TestShared(t *testing.T) {
	levels := []string{zone, rack}
	n := func(z, r string) *corev1.Node { return node(z+r, map[string]string{zone: z, rack: r}) }
	for name, tc := range map[string]struct {
		nodes  []*corev1.Node
		want   string
		wantOK bool
	}{
		"one rack":           {nodes: []*corev1.Node{n("z1", "r1"), n("z1", "r1")}, want: zone + "=z1," + rack + "=r1", wantOK: true},
		"two racks one zone": {nodes: []*corev1.Node{n("z1", "r1"), n("z1", "r2")}, want: zone + "=z1", wantOK: true},
		"two zones":          {nodes: []*corev1.Node{n("z1", "r1"), n("z2", "r1")}},
		"unlabelled":         {nodes: []*corev1.Node{node("x", nil)}},
		"none":               {},
	} {
		t.Run(name, func(t *testing.T) {
			d, ok := Shared(tc.nodes, levels)
			if ok != tc.wantOK || (ok && d.String() != tc.want) {
				t.Errorf("Shared = %v, %v; want %s, %v", d, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestPlanJoin(t *testing.T) {
	levels := []string{zone, rack}
	byName := map[string]*corev1.Node{}
	for _, n := range []*corev1.Node{
		node("a1", map[string]string{zone: "z1", rack: "r1"}),
		node("a2", map[string]string{zone: "z1", rack: "r1"}),
		node("b1", map[string]string{zone: "z2", rack: "r1"}),
	} {
		byName[n.Name] = n
	}
	member := func(uid, nodeName string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: nodeName}}
	}
	reservations := map[types.UID]string{"r-a2": "a2", "r-gone": "gone"}
	for name, tc := range map[string]struct {
		required bool
		placed   []*corev1.Pod
		want     joinOutcome
		domain   string
	}{
		"bound members share a rack": {
			required: true, placed: []*corev1.Pod{member("m1", "a1"), member("m2", "a2")},
			want: joinInDomain, domain: zone + "=z1," + rack + "=r1",
		},
		"a reserved member counts at its reservation's node": {
			required: true, placed: []*corev1.Pod{member("m1", "a1"), member("r-a2", "")},
			want: joinInDomain, domain: zone + "=z1," + rack + "=r1",
		},
		// The race TestPodGroupGang once lost: a member bound a moment
		// ago, its reservation released, the informer not showing its
		// node yet. Taking the shared domain of the rest would let the
		// joining pod leave the gang's rack.
		"required, a member on no known node waits": {
			required: true, placed: []*corev1.Pod{member("m1", "a1"), member("just-bound", "")},
			want: joinWait,
		},
		"required, a member on a node that is gone waits": {
			required: true, placed: []*corev1.Pod{member("r-gone", "")},
			want: joinWait,
		},
		"preferred, a member on no known node: the rest's domain": {
			placed: []*corev1.Pod{member("m1", "b1"), member("just-bound", "")},
			want:   joinInDomain, domain: zone + "=z2," + rack + "=r1",
		},
		"preferred gang across zones joins anywhere": {
			placed: []*corev1.Pod{member("m1", "a1"), member("m2", "b1")},
			want:   joinAnywhere,
		},
	} {
		t.Run(name, func(t *testing.T) {
			spec := Spec{Group: "g", Levels: levels, Required: tc.required}
			d, got := planJoin(spec, tc.placed, byName, func(uid types.UID) string { return reservations[uid] })
			if got != tc.want {
				t.Fatalf("planJoin outcome = %d, want %d", got, tc.want)
			}
			if got == joinInDomain && d.String() != tc.domain {
				t.Errorf("planJoin domain = %s, want %s", d, tc.domain)
			}
		})
	}
}

func TestOf(t *testing.T) {
	policy := func(g *bindgatev1alpha1.GangCondition) *bindgatev1alpha1.BindingPolicy {
		return &bindgatev1alpha1.BindingPolicy{Spec: bindgatev1alpha1.BindingPolicySpec{Permit: &bindgatev1alpha1.Permit{
			Conditions: []bindgatev1alpha1.PermitCondition{{Name: "ok", Expression: "true"}, {Name: "g", Gang: g}},
		}}}
	}
	pod := func(labels, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}}
	}
	member := map[string]string{bindgatev1alpha1.GroupLabel: "train"}
	for name, tc := range map[string]struct {
		policy *bindgatev1alpha1.BindingPolicy
		pod    *corev1.Pod
		want   Spec
		wantOK bool
	}{
		"no group label":    {policy: policy(&bindgatev1alpha1.GangCondition{MinMember: 2}), pod: pod(nil, nil)},
		"no gang condition": {policy: &bindgatev1alpha1.BindingPolicy{}, pod: pod(member, nil)},
		"plain gang": {
			policy: policy(&bindgatev1alpha1.GangCondition{MinMember: 4}), pod: pod(member, nil),
			want: Spec{Condition: "g", Group: "train", MinMember: 4}, wantOK: true,
		},
		"annotation overrides minMember": {
			policy: policy(&bindgatev1alpha1.GangCondition{MinMember: 4}),
			pod:    pod(member, map[string]string{bindgatev1alpha1.MinMemberAnnotation: "8"}),
			want:   Spec{Condition: "g", Group: "train", MinMember: 8}, wantOK: true,
		},
		"key, required by default": {
			policy: policy(&bindgatev1alpha1.GangCondition{MinMember: 2, Topology: &bindgatev1alpha1.GangTopology{Key: rack}}),
			pod:    pod(member, nil),
			want:   Spec{Condition: "g", Group: "train", MinMember: 2, Levels: []string{rack}, Required: true}, wantOK: true,
		},
		"levels, preferred": {
			policy: policy(&bindgatev1alpha1.GangCondition{MinMember: 2, Topology: &bindgatev1alpha1.GangTopology{
				Levels: []string{zone, rack}, Mode: bindgatev1alpha1.GangTopologyPreferred}}),
			pod:  pod(member, nil),
			want: Spec{Condition: "g", Group: "train", MinMember: 2, Levels: []string{zone, rack}}, wantOK: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := Of(tc.policy, tc.pod)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	n := map[string]*corev1.Node{
		"a1": node("a1", map[string]string{zone: "z1", rack: "a"}), "a2": node("a2", map[string]string{zone: "z1", rack: "a"}),
		"b1": node("b1", map[string]string{zone: "z1", rack: "b"}), "c1": node("c1", map[string]string{zone: "z2", rack: "c"}),
	}
	pod := func(group, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{bindgatev1alpha1.GroupLabel: group}},
			Spec: corev1.PodSpec{NodeName: node}}
	}
	levels := []string{zone, rack}
	for name, tc := range map[string]struct {
		pods   []*corev1.Pod
		levels []string
		want   *bindgatev1alpha1.GangsStatus
	}{
		"no gang member": {pods: []*corev1.Pod{{Spec: corev1.PodSpec{NodeName: "a1"}}}, levels: levels},
		"by domain": {
			pods:   []*corev1.Pod{pod("g1", "a1"), pod("g1", "a2"), pod("g2", "a1"), pod("g3", "a1"), pod("g3", "b1"), pod("g4", "a1"), pod("g4", "c1")},
			levels: levels,
			want:   &bindgatev1alpha1.GangsStatus{Bound: 4, Domains: "2 in " + zone + "=z1," + rack + "=a, 1 in " + zone + "=z1, 1 spread"},
		},
		"no topology": {
			pods: []*corev1.Pod{pod("g1", "a1"), pod("g2", "c1")},
			want: &bindgatev1alpha1.GangsStatus{Bound: 2, Domains: "2 without topology"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := Summarize(tc.pods, tc.levels, func(name string) *corev1.Node { return n[name] })
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
