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

package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// TestGangStats: gangs are counted whole from their label or their
// PodGroup, and those whose members share a rack counted apart.
func TestGangStats(t *testing.T) {
	rack := map[string]string{"a1": "a", "a2": "a", "b1": "b"}
	// gang makes the gangSize pods of the gang of pod i, shaped as kind,
	// bound to nodes in turn ("" unbound).
	gang := func(i int, kind string, nodes ...string) []corev1.Pod {
		var out []corev1.Pod
		for m := range gangSize {
			p := benchPod(i+m, BindgateSchedulerName, kind)
			p.Spec.NodeName = nodes[m%len(nodes)]
			out = append(out, *p)
		}
		return out
	}
	type stats struct{ Complete, OneRack int }
	for name, tc := range map[string]struct {
		pods []corev1.Pod
		want stats
	}{
		"label gangs": {
			pods: append(gang(0, KindGang, "a1", "a2"), gang(gangSize, KindGang, "a1", "b1")...),
			want: stats{Complete: 2, OneRack: 1},
		},
		"PodGroups": {
			pods: append(gang(0, KindPodGroup, "b1"), gang(gangSize, KindPodGroupRack, "a2", "b1")...),
			want: stats{Complete: 2, OneRack: 1},
		},
		"a PodGroup bound in part is not whole": {
			pods: gang(0, KindPodGroup, "a1", ""),
			want: stats{},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var got stats
			got.Complete, got.OneRack = gangStats(tc.pods, rack)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("gangStats (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodGroupPods: the pods of a PodGroup workload name their PodGroup
// (the gangSize pods of one gang the same) and carry no bindgate group
// label, whoever schedules them.
func TestPodGroupPods(t *testing.T) {
	for _, c := range []string{Bindgate, BindgateSchedulerName, KubeScheduler, UngateKubeScheduler} {
		for i := range 2 * gangSize {
			p := benchPod(i, c, KindPodGroupRack)
			g := p.Spec.SchedulingGroup
			if g == nil || g.PodGroupName == nil || *g.PodGroupName != gangName(i) {
				t.Fatalf("%s pod %d: schedulingGroup %+v, want PodGroup %s", c, i, g, gangName(i))
			}
			if _, ok := p.Labels[bindgatev1alpha1.GroupLabel]; ok {
				t.Errorf("%s pod %d carries bindgate's group label", c, i)
			}
		}
	}
	if gangName(gangSize-1) == gangName(gangSize) {
		t.Errorf("pods %d and %d share gang %s", gangSize-1, gangSize, gangName(gangSize))
	}
}
