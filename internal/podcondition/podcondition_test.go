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

package podcondition

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMerge(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	waiting := corev1.PodCondition{Type: "Permitted", Status: corev1.ConditionFalse, Reason: "Waiting", Message: "gang: 1/2", LastTransitionTime: then}
	podWith := func(cs ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Conditions: cs}}
	}
	for name, tc := range map[string]struct {
		pod         *corev1.Pod
		cond        corev1.PodCondition
		want        corev1.PodCondition
		wantChanged bool
	}{
		"new condition stamped now": {
			pod:         podWith(),
			cond:        corev1.PodCondition{Type: "Permitted", Status: corev1.ConditionFalse, Reason: "Waiting", Message: "m"},
			want:        corev1.PodCondition{Type: "Permitted", Status: corev1.ConditionFalse, Reason: "Waiting", Message: "m", LastTransitionTime: now},
			wantChanged: true,
		},
		"same status, reason and message: no write": {
			pod:  podWith(waiting),
			cond: corev1.PodCondition{Type: "Permitted", Status: corev1.ConditionFalse, Reason: "Waiting", Message: "gang: 1/2"},
			want: waiting,
		},
		"same status, new message keeps the transition time": {
			pod:         podWith(waiting),
			cond:        corev1.PodCondition{Type: "Permitted", Status: corev1.ConditionFalse, Reason: "Timeout", Message: "timed out"},
			want:        corev1.PodCondition{Type: "Permitted", Status: corev1.ConditionFalse, Reason: "Timeout", Message: "timed out", LastTransitionTime: then},
			wantChanged: true,
		},
		"status change stamps now": {
			pod:         podWith(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: then}, waiting),
			cond:        corev1.PodCondition{Type: "Permitted", Status: corev1.ConditionTrue, Reason: "Permitted", Message: "ok"},
			want:        corev1.PodCondition{Type: "Permitted", Status: corev1.ConditionTrue, Reason: "Permitted", Message: "ok", LastTransitionTime: now},
			wantChanged: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			got, changed := Merge(tc.pod, tc.cond, now)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("condition (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.pod); diff != "" {
				t.Errorf("Merge changed the pod (-before +after):\n%s", diff)
			}
		})
	}
}
