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

package dryrun

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	fwk "k8s.io/kube-scheduler/framework"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/placement"
)

func decisions(prefix string, n int) []bindgatev1alpha1.DryRunDecision {
	out := make([]bindgatev1alpha1.DryRunDecision, n)
	for i := range out {
		out[i] = bindgatev1alpha1.DryRunDecision{PodName: fmt.Sprintf("%s-%d", prefix, i)}
	}
	return out
}

func names(ds []bindgatev1alpha1.DryRunDecision) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.PodName
	}
	return out
}

func TestMerge(t *testing.T) {
	cases := map[string]struct {
		old, newer *bindgatev1alpha1.DryRunStatus
		want       *bindgatev1alpha1.DryRunStatus
		wantRecent []string
	}{
		"counts add, newer decisions first": {
			old:        &bindgatev1alpha1.DryRunStatus{Bind: 2, Wait: 1, Recent: decisions("old", 2)},
			newer:      &bindgatev1alpha1.DryRunStatus{Bind: 1, Unschedulable: 3, Refuse: 1, Recent: decisions("new", 1)},
			want:       &bindgatev1alpha1.DryRunStatus{Bind: 3, Wait: 1, Unschedulable: 3, Refuse: 1},
			wantRecent: []string{"new-0", "old-0", "old-1"},
		},
		"at most MaxDryRunExamples decisions are kept": {
			old:        &bindgatev1alpha1.DryRunStatus{Recent: decisions("old", 8)},
			newer:      &bindgatev1alpha1.DryRunStatus{Recent: decisions("new", 4)},
			want:       &bindgatev1alpha1.DryRunStatus{},
			wantRecent: []string{"new-0", "new-1", "new-2", "new-3", "old-0", "old-1", "old-2", "old-3", "old-4", "old-5"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			merge(tc.old, tc.newer)
			if diff := cmp.Diff(tc.wantRecent, names(tc.old.Recent)); diff != "" {
				t.Errorf("recent (-want +got):\n%s", diff)
			}
			tc.old.Recent = nil
			if diff := cmp.Diff(tc.want, tc.old); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNoteAndFitMessage(t *testing.T) {
	cases := map[string]struct {
		dec     Decision
		takenBy string
		want    string
	}{
		"bind": {Decision{Outcome: bindgatev1alpha1.DryRunBind, Node: "n1"}, "live",
			"BindingPolicy trial (DryRun) would bind the pod to node n1; BindingPolicy live takes it"},
		"wait": {Decision{Outcome: bindgatev1alpha1.DryRunWait, Node: "n1", Reason: "approved: expression is false"}, "",
			"BindingPolicy trial (DryRun) would reserve node n1 and wait for permit conditions: approved: expression is false; no policy takes it"},
		"refuse": {Decision{Outcome: bindgatev1alpha1.DryRunRefuse, Reason: "rejected by permit condition hook: no"}, "live",
			"BindingPolicy trial (DryRun) would refuse the pod: rejected by permit condition hook: no; BindingPolicy live takes it"},
		"unschedulable": {Decision{Outcome: bindgatev1alpha1.DryRunUnschedulable, Reason: FitMessage(&placement.Evaluation{
			NumNodes: 3,
			Refused: map[string]*fwk.Status{
				"a": fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu", "Insufficient memory"),
				"b": fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"),
				"c": fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't match policy nodeSelector"),
			},
		})}, "live",
			"BindingPolicy trial (DryRun) would leave the pod unschedulable: 0/3 nodes are available: 1 Insufficient memory, 1 node(s) didn't match policy nodeSelector, 2 Insufficient cpu; BindingPolicy live takes it"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Note("trial", tc.dec, tc.takenBy)); diff != "" {
				t.Errorf("note (-want +got):\n%s", diff)
			}
		})
	}
}
