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
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/ledger"
	"github.com/bindgate/bindgate/internal/testenv"
)

var env *testenv.Env

// TestMain runs this package's tests against a real kube-apiserver: Recheck
// lists the pods bound to a node from it.
func TestMain(m *testing.M) { testenv.Main(m, &env) }

// uniq names an object apart from every other of the test process.
var uniq = testenv.Uniq

// TestRecheck: the ledger's check before a write when several replicas may
// be active. This process holds z (1 CPU) on node "small" (2 CPUs) and its
// own placement of w (600m) on node "big"; the status read and the pods the
// API server lists bound decide what else holds capacity on "small". z is
// refused whenever the other replica's record or a bind leaves no room for
// it, even when the cache counts the pod in question on "big" (two replicas
// placed w on different nodes: whichever record stays, its capacity must be
// counted where it is recorded).
func TestRecheck(t *testing.T) {
	cases := map[string]struct {
		// recordW: the status records w (1100m) on this node ("" none).
		recordW string
		// boundW: the API server has w (1100m) bound on this node.
		boundW string
		want   map[string]string // pod -> error, "" for none
	}{
		"nothing else on small": {
			want: map[string]string{"w": "", "z": ""},
		},
		"the other replica recorded w on big": {
			recordW: "big",
			want:    map[string]string{"w": "", "z": ""},
		},
		"the other replica recorded w on small": {
			recordW: "small",
			want:    map[string]string{"w": "already reserved on node small", "z": "on node small ([cpu])"},
		},
		"the other replica bound w to small": {
			boundW: "small",
			want:   map[string]string{"w": "", "z": "on node small ([cpu])"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniq("recheck")}}
			if err := env.Client.Create(ctx, ns); err != nil {
				t.Fatal(err)
			}
			small, big := uniq("small"), uniq("big")
			nodes := map[string]string{"small": small, "big": big}
			c := cache.New(ctx, nil)
			c.UpsertNode(node(small, "2"))
			c.UpsertNode(node(big, "4"))
			w, z := pod(ns.Name, "w", "600m"), pod(ns.Name, "z", "1")
			if tc.boundW != "" {
				bw := pod(ns.Name, "w", "1100m")
				bw.Spec.NodeName = nodes[tc.boundW]
				if err := env.Client.Create(ctx, bw); err != nil {
					t.Fatal(err)
				}
				w.UID = bw.UID
			} else {
				w.UID = types.UID(uniq("uid-w"))
			}
			z.UID = types.UID(uniq("uid-z"))
			policy := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: uniq("recheck")}}
			for p, n := range map[*corev1.Pod]string{w: big, z: small} {
				if err := c.Reserve(p, framework.PodRequests(p), n, policy, time.Time{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.recordW != "" {
				policy.Status.Reservations = []bindgatev1alpha1.Reservation{*ledger.NewReservation(w, nodes[tc.recordW],
					corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1100m")}, time.Now(), nil)}
			}
			h := &Handlers{Reader: env.Client, Cache: c}
			adds := []*bindgatev1alpha1.Reservation{
				ledger.NewReservation(w, big, framework.PodRequests(w).ResourceList(), time.Now(), nil),
				ledger.NewReservation(z, small, framework.PodRequests(z).ResourceList(), time.Now(), nil),
			}
			lost := h.Recheck(env.Client)(ctx, policy, adds)
			got := map[string]string{}
			for _, p := range []*corev1.Pod{w, z} {
				got[p.Name] = ""
				if err := lost[p.UID]; err != nil {
					if !errors.Is(err, ledger.ErrLostRace) {
						t.Errorf("%s: %v, want ErrLostRace", p.Name, err)
					}
					// The nodes' unique names read as in the table; the
					// whole message shows when it does not end as wanted.
					msg := strings.NewReplacer(small, "small", big, "big").Replace(err.Error())
					got[p.Name] = msg
					if want := tc.want[p.Name]; want != "" && strings.HasSuffix(msg, want) {
						got[p.Name] = want
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("refused (-want +got):\n%s", diff)
			}
		})
	}
}

func node(name, cpu string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}}}
}

func pod(ns, name, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}
