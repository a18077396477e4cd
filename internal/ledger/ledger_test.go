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

package ledger

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

func res(name, node, cpu string, waiting bool) *bindgatev1alpha1.Reservation {
	r := &bindgatev1alpha1.Reservation{
		PodNamespace: "ns", PodName: name, PodUID: types.UID("uid-" + name), Node: node,
		Resources:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		ReservedAt: metav1.Now(),
	}
	if waiting {
		t := metav1.Now()
		r.PermitDeadline = &t
	}
	return r
}

type summary struct {
	Pods     []string
	Reserved int32
	Waiting  int32
	CPU      string
}

func summarize(s *bindgatev1alpha1.BindingPolicyStatus) summary {
	out := summary{Reserved: s.ReservedPods, Waiting: s.WaitingPods}
	for _, r := range s.Reservations {
		out.Pods = append(out.Pods, r.PodName+"@"+r.Node)
	}
	if q, ok := s.Reserved[corev1.ResourceCPU]; ok {
		out.CPU = q.String()
	}
	return out
}

// TestApply checks one group commit: many adds and removes in one write.
func TestApply(t *testing.T) {
	cases := map[string]struct {
		start   []*bindgatev1alpha1.Reservation
		ops     []op
		results []error
		want    summary
	}{
		"adds in one batch": {
			ops:  []op{{add: res("b", "n1", "500m", false)}, {add: res("a", "n2", "1", true)}},
			want: summary{Pods: []string{"a@n2", "b@n1"}, Reserved: 2, Waiting: 1, CPU: "1500m"},
		},
		"remove then re-add the same pod in one batch keeps one entry": {
			start: []*bindgatev1alpha1.Reservation{res("a", "n1", "1", false)},
			ops:   []op{{remove: "uid-a"}, {add: res("a", "n2", "1", false)}},
			want:  summary{Pods: []string{"a@n2"}, Reserved: 1, CPU: "1"},
		},
		"add then remove the same pod in one batch leaves nothing (deleted while recorded)": {
			ops:  []op{{add: res("a", "n1", "1", true)}, {add: res("b", "n1", "1", false)}, {remove: "uid-a"}},
			want: summary{Pods: []string{"b@n1"}, Reserved: 1, CPU: "1"},
		},
		"add replaces the entry of the same pod (permit deadline set)": {
			start: []*bindgatev1alpha1.Reservation{res("a", "n1", "1", false)},
			ops:   []op{{add: res("a", "n1", "1", true)}},
			want:  summary{Pods: []string{"a@n1"}, Reserved: 1, Waiting: 1, CPU: "1"},
		},
		"removing an unknown pod is a no-op": {
			start: []*bindgatev1alpha1.Reservation{res("a", "n1", "1", false)},
			ops:   []op{{remove: "uid-zzz"}},
			want:  summary{Pods: []string{"a@n1"}, Reserved: 1, CPU: "1"},
		},
		"removing the last entry clears the totals": {
			start: []*bindgatev1alpha1.Reservation{res("a", "n1", "1", false)},
			ops:   []op{{remove: "uid-a"}},
			want:  summary{},
		},
		"a record's release removes that record (a failed Record the server applied)": {
			start: []*bindgatev1alpha1.Reservation{res("a", "n1", "1", false)},
			ops:   []op{{remove: "uid-a", only: res("a", "n1", "1", false)}},
			want:  summary{},
		},
		"a record's release leaves another record of the pod (another node)": {
			start: []*bindgatev1alpha1.Reservation{res("a", "n2", "1", false)},
			ops:   []op{{remove: "uid-a", only: res("a", "n1", "1", false)}},
			want:  summary{Pods: []string{"a@n2"}, Reserved: 1, CPU: "1"},
		},
		"a record's release leaves a record of the pod taken at another time": {
			start: []*bindgatev1alpha1.Reservation{func() *bindgatev1alpha1.Reservation {
				r := res("a", "n1", "1", false)
				r.ReservedAt = metav1.NewTime(r.ReservedAt.Add(-time.Minute))
				return r
			}()},
			ops:  []op{{remove: "uid-a", only: res("a", "n1", "1", false)}},
			want: summary{Pods: []string{"a@n1"}, Reserved: 1, CPU: "1"},
		},
		"a record's release undoes that record added earlier in the batch, not a later one": {
			ops: []op{
				{add: res("a", "n1", "1", false)}, {remove: "uid-a", only: res("a", "n1", "1", false)},
				{add: res("b", "n1", "1", false)}, {remove: "uid-b", only: res("b", "n2", "1", false)},
			},
			want: summary{Pods: []string{"b@n1"}, Reserved: 1, CPU: "1"},
		},
		"ops that failed validation are skipped": {
			ops:     []op{{add: res("a", "n1", "1", false)}, {add: res("b", "n1", "1", false)}},
			results: []error{ErrLostRace, nil},
			want:    summary{Pods: []string{"b@n1"}, Reserved: 1, CPU: "1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := &bindgatev1alpha1.BindingPolicyStatus{}
			for _, r := range tc.start {
				st.Reservations = append(st.Reservations, *r)
			}
			Totals(st)
			apply(st, tc.ops, tc.results, bindgatev1alpha1.MaxReservations)
			if diff := cmp.Diff(tc.want, summarize(st)); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApplyFull: past the ledger's limit (2 here), additions are refused with
// ErrStatusFull and the policy says so in ReservationsFull; removals in the
// same batch make room first, and the condition turns False once there is
// room again.
func TestApplyFull(t *testing.T) {
	type want struct {
		Summary   summary
		Refused   []int // indexes of the ops refused as full
		Condition string
	}
	full := func(n int) []*bindgatev1alpha1.Reservation {
		var out []*bindgatev1alpha1.Reservation
		for i := range n {
			out = append(out, res(string(rune('a'+i)), "n1", "1", false))
		}
		return out
	}
	cases := map[string]struct {
		start     []*bindgatev1alpha1.Reservation
		condition metav1.ConditionStatus // ReservationsFull before, "" for none
		ops       []op
		want      want
	}{
		"room for one of two": {
			start: full(1),
			ops:   []op{{add: res("x", "n1", "1", false)}, {add: res("y", "n1", "1", false)}},
			want: want{Summary: summary{Pods: []string{"a@n1", "x@n1"}, Reserved: 2, CPU: "2"}, Refused: []int{1},
				Condition: "True/MaxReservations"},
		},
		"an update of a held pod is not an addition": {
			start: full(2),
			ops:   []op{{add: res("a", "n1", "1", true)}},
			want:  want{Summary: summary{Pods: []string{"a@n1", "b@n1"}, Reserved: 2, Waiting: 1, CPU: "2"}},
		},
		"a removal in the batch makes room": {
			start: full(2),
			ops:   []op{{add: res("x", "n1", "1", false)}, {remove: "uid-a"}},
			want:  want{Summary: summary{Pods: []string{"b@n1", "x@n1"}, Reserved: 2, CPU: "2"}},
		},
		"a group without room for all is refused whole": {
			start: full(1),
			ops:   []op{{add: res("x", "n1", "1", false), group: 1}, {add: res("y", "n1", "1", false), group: 1}},
			want: want{Summary: summary{Pods: []string{"a@n1"}, Reserved: 1, CPU: "1"}, Refused: []int{0, 1},
				Condition: "True/MaxReservations"},
		},
		"a group with room for all is recorded whole": {
			ops:  []op{{add: res("x", "n1", "1", false), group: 1}, {add: res("y", "n1", "1", false), group: 1}},
			want: want{Summary: summary{Pods: []string{"x@n1", "y@n1"}, Reserved: 2, CPU: "2"}},
		},
		"a group member the status holds takes no room": {
			start: full(1),
			ops:   []op{{add: res("a", "n1", "1", false), group: 1}, {add: res("y", "n1", "1", false), group: 1}},
			want:  want{Summary: summary{Pods: []string{"a@n1", "y@n1"}, Reserved: 2, CPU: "2"}},
		},
		"a removal in the batch makes room for a group": {
			start: full(2),
			ops:   []op{{remove: "uid-a"}, {remove: "uid-b"}, {add: res("x", "n1", "1", false), group: 1}, {add: res("y", "n1", "1", false), group: 1}},
			want:  want{Summary: summary{Pods: []string{"x@n1", "y@n1"}, Reserved: 2, CPU: "2"}},
		},
		"an update of a held pod leaves the condition as it is": {
			start: full(1), condition: metav1.ConditionTrue,
			ops:  []op{{add: res("a", "n1", "1", true)}},
			want: want{Summary: summary{Pods: []string{"a@n1"}, Reserved: 1, Waiting: 1, CPU: "1"}, Condition: "True/MaxReservations"},
		},
		"an addition with room leaves the condition as it is": {
			start: full(0), condition: metav1.ConditionTrue,
			ops:  []op{{add: res("x", "n1", "1", false)}},
			want: want{Summary: summary{Pods: []string{"x@n1"}, Reserved: 1, CPU: "1"}, Condition: "True/MaxReservations"},
		},
		"room again clears the condition": {
			start: full(2), condition: metav1.ConditionTrue,
			ops:  []op{{remove: "uid-a"}},
			want: want{Summary: summary{Pods: []string{"b@n1"}, Reserved: 1, CPU: "1"}, Condition: "False/HasRoom"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := &bindgatev1alpha1.BindingPolicyStatus{}
			for _, r := range tc.start {
				st.Reservations = append(st.Reservations, *r)
			}
			if tc.condition != "" {
				st.Conditions = []metav1.Condition{{Type: bindgatev1alpha1.ConditionReservationsFull, Status: tc.condition, Reason: bindgatev1alpha1.ReasonMaxReservations}}
			}
			Totals(st)
			results := make([]error, len(tc.ops))
			apply(st, tc.ops, results, 2)
			got := want{Summary: summarize(st)}
			for i, err := range results {
				if errors.Is(err, ErrStatusFull) {
					got.Refused = append(got.Refused, i)
				}
			}
			if c := meta.FindStatusCondition(st.Conditions, bindgatev1alpha1.ConditionReservationsFull); c != nil {
				got.Condition = string(c.Status) + "/" + c.Reason
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
