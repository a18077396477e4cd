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
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// sealWith is the seal of (uid, policy) under key, made with a fresh HMAC.
func sealWith(key []byte, uid types.UID, policy string) string {
	return seal(hmac.New(sha256.New, key), uid, policy)
}

// TestBoundBy: only the policy record bindgate sealed for this very pod
// counts; whatever else a pod's owner writes yields no policy.
func TestBoundBy(t *testing.T) {
	key := []byte("operator-key")
	UseSealKey(key)
	t.Cleanup(func() { UseSealKey(nil) })
	const uid = types.UID("uid-1")
	good := sealWith(key, uid, "team-a")
	type want struct {
		Sealed, Bound string
		OK, BoundOK   bool
	}
	cases := map[string]struct {
		uid         types.UID
		node        string
		annotations map[string]string
		want        want
	}{
		"sealed and bound": {
			uid: uid, node: "n1",
			annotations: map[string]string{bindgatev1alpha1.PolicyAnnotation: "team-a", bindgatev1alpha1.SealAnnotation: good},
			want:        want{Sealed: "team-a", OK: true, Bound: "team-a", BoundOK: true},
		},
		"sealed, not bound yet (ungated and pinned)": {
			uid:         uid,
			annotations: map[string]string{bindgatev1alpha1.PolicyAnnotation: "team-a", bindgatev1alpha1.SealAnnotation: good},
			want:        want{Sealed: "team-a", OK: true},
		},
		"policy annotation without a seal": {
			uid: uid, node: "n1",
			annotations: map[string]string{bindgatev1alpha1.PolicyAnnotation: "team-a"},
		},
		"another policy named under a real seal": {
			uid: uid, node: "n1",
			annotations: map[string]string{bindgatev1alpha1.PolicyAnnotation: "team-b", bindgatev1alpha1.SealAnnotation: good},
		},
		"a seal copied from another pod": {
			uid: "uid-2", node: "n1",
			annotations: map[string]string{bindgatev1alpha1.PolicyAnnotation: "team-a", bindgatev1alpha1.SealAnnotation: good},
		},
		"a seal made with another key": {
			uid: uid, node: "n1",
			annotations: map[string]string{bindgatev1alpha1.PolicyAnnotation: "team-a", bindgatev1alpha1.SealAnnotation: sealWith([]byte("guess"), uid, "team-a")},
		},
		"an empty seal": {
			uid: uid, node: "n1",
			annotations: map[string]string{bindgatev1alpha1.PolicyAnnotation: "team-a", bindgatev1alpha1.SealAnnotation: ""},
		},
		"pending PostBind without any policy record": {
			uid: uid, node: "n1",
			annotations: map[string]string{bindgatev1alpha1.PostBindPendingAnnotation: "audit"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: tc.uid, Annotations: tc.annotations},
				Spec:       corev1.PodSpec{NodeName: tc.node},
			}
			var got want
			got.Sealed, got.OK = SealedPolicy(pod)
			got.Bound, got.BoundOK = BoundBy(pod)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoKeyTrustsNothing: before the operator installs its key, no seal
// verifies and none is written.
func TestNoKeyTrustsNothing(t *testing.T) {
	UseSealKey(nil)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "u", Annotations: map[string]string{
			bindgatev1alpha1.PolicyAnnotation: "p", bindgatev1alpha1.SealAnnotation: sealWith(nil, "u", "p"),
		}},
		Spec: corev1.PodSpec{NodeName: "n"},
	}
	if p, ok := BoundBy(pod); ok {
		t.Errorf("BoundBy = %q without a key", p)
	}
	if s := Seal("u", "p"); s != "" {
		t.Errorf("Seal = %q without a key", s)
	}
}

// TestOurs: bindgate places a pod that carries its gate, names it as the
// scheduler, or carries the policy record bindgate sealed when it lifted
// the gate (a bind that failed after that is retried); a record a pod's
// owner wrote alone does not make a pod bindgate's.
func TestOurs(t *testing.T) {
	key := []byte("operator-key")
	UseSealKey(key)
	t.Cleanup(func() { UseSealKey(nil) })
	const uid = types.UID("uid-1")
	cases := map[string]struct {
		spec        corev1.PodSpec
		annotations map[string]string
		want        bool
	}{
		"gated": {
			spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}}},
			want: true,
		},
		"schedulerName bindgate": {spec: corev1.PodSpec{SchedulerName: bindgatev1alpha1.SchedulerName}, want: true},
		"ungated by bindgate, not bound yet": {
			annotations: map[string]string{bindgatev1alpha1.PolicyAnnotation: "team-a", bindgatev1alpha1.SealAnnotation: sealWith(key, uid, "team-a")},
			want:        true,
		},
		"another controller's gate only": {
			spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/other"}}},
		},
		"default scheduler":                      {},
		"policy record written by the pod owner": {annotations: map[string]string{bindgatev1alpha1.PolicyAnnotation: "team-a"}},
		"a seal made with another key": {
			annotations: map[string]string{bindgatev1alpha1.PolicyAnnotation: "team-a", bindgatev1alpha1.SealAnnotation: sealWith([]byte("guess"), uid, "team-a")},
		},
	}
	got, want := map[string]bool{}, map[string]bool{}
	for name, c := range cases {
		got[name] = Ours(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Annotations: c.annotations}, Spec: c.spec})
		want[name] = c.want
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Ours (-want +got):\n%s", diff)
	}
}

// TestSealStable: seals made with the pooled HMACs are the HMAC-SHA256 of
// the version prefix, the UID and the policy, the same on every call, from
// many goroutines at once, and under the newly installed key after a key
// change (a pod sealed by an earlier release must still verify).
func TestSealStable(t *testing.T) {
	t.Cleanup(func() { UseSealKey(nil) })
	want := func(key []byte, uid types.UID, policy string) string {
		m := hmac.New(sha256.New, key)
		m.Write([]byte("bindgate-seal-v1\x00" + string(uid) + "\x00" + policy))
		return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	for _, key := range [][]byte{[]byte("key-one"), []byte("key-two")} {
		UseSealKey(key)
		var wg sync.WaitGroup
		errs := make(chan string, 64)
		for g := range 8 {
			wg.Go(func() {
				for i := range 50 {
					uid, policy := types.UID(fmt.Sprintf("uid-%d-%d", g, i)), fmt.Sprintf("team-%d", i%3)
					if got, w := Seal(uid, policy), want(key, uid, policy); got != w {
						errs <- fmt.Sprintf("Seal(%s, %s) under %q = %s, want %s", uid, policy, key, got, w)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	}
	UseSealKey(nil)
	if got := Seal("uid", "team"); got != "" {
		t.Errorf("Seal without a key = %q, want none", got)
	}
}
