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

package eventhandlers

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/queue"
)

// TestPodEventsThatMoveUnschedulable: which pod events requeue every
// unschedulable pod. A new gang member does not: its own cycle places its
// gang (every member arriving requeued every unschedulable pod of the
// cluster, and every waiting member of its gang checked the gang again).
func TestPodEventsThatMoveUnschedulable(t *testing.T) {
	pod := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"}}
		mutate(p)
		return p
	}
	for name, tc := range map[string]struct {
		pod     *corev1.Pod
		deleted bool
		moves   int
	}{
		"a new gang member": {
			pod: pod(func(p *corev1.Pod) { p.Labels = map[string]string{bindgatev1alpha1.GroupLabel: "g"} }),
		},
		"a new pod": {pod: pod(func(*corev1.Pod) {})},
		"a bound pod deleted": {
			pod:     pod(func(p *corev1.Pod) { p.Spec.NodeName = "n1" }),
			deleted: true,
			moves:   1,
		},
		"a bound pod that ended": {
			pod:   pod(func(p *corev1.Pod) { p.Spec.NodeName = "n1"; p.Status.Phase = corev1.PodSucceeded }),
			moves: 1,
		},
		"a bound pod running": {pod: pod(func(p *corev1.Pod) { p.Spec.NodeName = "n1"; p.Status.Phase = corev1.PodRunning })},
	} {
		t.Run(name, func(t *testing.T) {
			moves := 0
			h := &Handlers{Cache: cache.New(context.Background(), nil), Queue: queue.New(nil, func() { moves++ })}
			if tc.deleted {
				h.onPod(tc.pod, true)
			} else {
				h.onPodAdd(tc.pod)
			}
			if moves != tc.moves {
				t.Errorf("unschedulable pods moved %d times, want %d", moves, tc.moves)
			}
		})
	}
}
