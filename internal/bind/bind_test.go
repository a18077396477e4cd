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

package bind

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func gate(name string) corev1.PodSchedulingGate { return corev1.PodSchedulingGate{Name: name} }

// TestUngate runs the ungate patch against the real API server: bindgate's
// gate goes, other gates and the pod's own nodeSelector and annotations stay,
// the pin is added unless the pod names bindgate as its scheduler.
func TestUngate(t *testing.T) {
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ungate"}}); err != nil {
		t.Fatal(err)
	}
	type want struct {
		Gates        []corev1.PodSchedulingGate
		NodeSelector map[string]string
		Annotations  map[string]string
	}
	labelled := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{HostnameLabel: "host-a"}}}
	bare := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}
	cases := map[string]struct {
		gates         []corev1.PodSchedulingGate
		nodeSelector  map[string]string
		schedulerName string
		node          *corev1.Node
		want          want
	}{
		"only bindgate's gate": {
			gates: []corev1.PodSchedulingGate{gate(bindgatev1alpha1.SchedulingGate)}, node: labelled,
			want: want{NodeSelector: map[string]string{HostnameLabel: "host-a"}},
		},
		"other gates stay in order": {
			gates: []corev1.PodSchedulingGate{gate("example.com/a"), gate(bindgatev1alpha1.SchedulingGate), gate("example.com/b")}, node: labelled,
			want: want{Gates: []corev1.PodSchedulingGate{gate("example.com/a"), gate("example.com/b")}, NodeSelector: map[string]string{HostnameLabel: "host-a"}},
		},
		"own nodeSelector kept": {
			gates: []corev1.PodSchedulingGate{gate(bindgatev1alpha1.SchedulingGate)}, nodeSelector: map[string]string{"pool": "batch"}, node: labelled,
			want: want{NodeSelector: map[string]string{"pool": "batch", HostnameLabel: "host-a"}},
		},
		"node without hostname label pins its name": {
			gates: []corev1.PodSchedulingGate{gate(bindgatev1alpha1.SchedulingGate)}, node: bare,
			want: want{NodeSelector: map[string]string{HostnameLabel: "node-b"}},
		},
		"schedulerName bindgate is not pinned": {
			gates: []corev1.PodSchedulingGate{gate(bindgatev1alpha1.SchedulingGate)}, schedulerName: bindgatev1alpha1.SchedulerName, node: labelled,
			want: want{},
		},
	}
	i := 0
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i++
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ungate", Name: fmt.Sprintf("pod-%d", i), Annotations: map[string]string{"team": "x"}},
				Spec: corev1.PodSpec{SchedulingGates: tc.gates, NodeSelector: tc.nodeSelector, SchedulerName: tc.schedulerName,
					Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
			}
			if err := env.Client.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			if err := Ungate(ctx, env.Client, pod, tc.node, "p1"); err != nil {
				t.Fatal(err)
			}
			got := &corev1.Pod{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
				t.Fatal(err)
			}
			tc.want.Annotations = map[string]string{"team": "x", bindgatev1alpha1.PolicyAnnotation: "p1"}
			gotWant := want{Gates: got.Spec.SchedulingGates, NodeSelector: got.Spec.NodeSelector, Annotations: got.Annotations}
			if diff := cmp.Diff(tc.want, gotWant); diff != "" {
				t.Errorf("pod after Ungate (-want +got):\n%s", diff)
			}
			if got.ResourceVersion != pod.ResourceVersion {
				t.Errorf("pod not updated in place: resourceVersion %s, API server has %s", pod.ResourceVersion, got.ResourceVersion)
			}
		})
	}
}

// TestUngateConflict: the patch is optimistic-locked, so a pod changed
// since it was read is not ungated and the caller gets a Conflict.
func TestUngateConflict(t *testing.T) {
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "conflict"}}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "conflict", Name: "pod"},
		Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{gate(bindgatev1alpha1.SchedulingGate)},
			Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	stale := pod.DeepCopy()
	pod.Labels = map[string]string{"changed": "yes"}
	if err := env.Client.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	err := Ungate(ctx, env.Client, stale, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, "p1")
	if !apierrors.IsConflict(err) {
		t.Fatalf("Ungate of a stale pod: got %v, want a Conflict", err)
	}
	got := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	if !HasGate(got) || got.Spec.NodeSelector != nil {
		t.Errorf("a refused patch changed the pod: gates %v, nodeSelector %v", got.Spec.SchedulingGates, got.Spec.NodeSelector)
	}
}
