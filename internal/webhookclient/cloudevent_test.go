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

package webhookclient

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestNewPodBoundEvent(t *testing.T) {
	ts := func(sec int) metav1.Time { return metav1.NewTime(time.Unix(1767225600+int64(sec), 0)) }
	pod := types.NamespacedName{Namespace: "team-a", Name: "web-0"}
	uid := types.UID("6b1f9c2e-0000-4000-8000-000000000001")
	full := PodBoundData{
		Node:      "node-3",
		Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		GateSeen:  ts(0), Reserved: ts(1), Permitted: ts(2), Bound: ts(3),
	}
	wantData := full
	wantData.PodUID, wantData.Namespace, wantData.Name, wantData.Policy = string(uid), "team-a", "web-0", "gpu-batch"

	cases := map[string]struct {
		policy, webhook string
		pod             types.NamespacedName
		uid             types.UID
		data            PodBoundData
		want            *PodBoundEvent // nil means an error is expected
		wantKeys        []string       // keys of the JSON data object
	}{
		"full event": {
			policy: "gpu-batch", webhook: "audit", pod: pod, uid: uid, data: full,
			want: &PodBoundEvent{
				SpecVersion:     "1.0",
				Type:            "dev.bindgate.pod.bound",
				Source:          "/apis/scheduling.bindgate.dev/v1alpha1/bindingpolicies/gpu-batch",
				Subject:         "team-a/web-0",
				ID:              sha256Hex(string(uid) + "/audit"),
				DataContentType: "application/json",
				Data:            wantData,
			},
			wantKeys: []string{"boundTime", "gateSeenTime", "name", "namespace", "node", "permittedTime",
				"podUID", "policy", "reservedTime", "resources"},
		},
		"identity fields come from the arguments, zero times are left out": {
			policy: "gpu-batch", webhook: "audit", pod: pod, uid: uid,
			data: PodBoundData{PodUID: "stale", Namespace: "x", Name: "y", Policy: "z", Node: "node-3"},
			want: &PodBoundEvent{
				SpecVersion:     "1.0",
				Type:            "dev.bindgate.pod.bound",
				Source:          "/apis/scheduling.bindgate.dev/v1alpha1/bindingpolicies/gpu-batch",
				Subject:         "team-a/web-0",
				ID:              sha256Hex(string(uid) + "/audit"),
				DataContentType: "application/json",
				Data:            PodBoundData{PodUID: string(uid), Namespace: "team-a", Name: "web-0", Policy: "gpu-batch", Node: "node-3"},
			},
			wantKeys: []string{"name", "namespace", "node", "podUID", "policy"},
		},
		"missing pod UID": {policy: "gpu-batch", webhook: "audit", pod: pod},
		"missing webhook": {policy: "gpu-batch", pod: pod, uid: uid},
		"missing policy":  {webhook: "audit", pod: pod, uid: uid},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := time.Now().Add(-time.Second)
			body, id, err := NewPodBoundEvent(tc.policy, tc.pod, tc.uid, tc.webhook, tc.data)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("NewPodBoundEvent succeeded, want an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("NewPodBoundEvent: %v", err)
			}
			var got PodBoundEvent
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("unmarshalling %s: %v", body, err)
			}
			if diff := cmp.Diff(tc.want, &got, cmpopts.IgnoreFields(PodBoundEvent{}, "Time"),
				cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("event mismatch (-want +got):\n%s", diff)
			}
			if id != got.ID {
				t.Errorf("returned id %q != event id %q", id, got.ID)
			}
			if got.Time.Before(before) || got.Time.After(time.Now().Add(time.Second)) {
				t.Errorf("event time %s is not now", got.Time)
			}
			var raw struct {
				Data map[string]json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(body, &raw); err != nil {
				t.Fatalf("unmarshalling data: %v", err)
			}
			if diff := cmp.Diff(tc.wantKeys, keys(raw.Data), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("data keys mismatch (-want +got):\n%s", diff)
			}

			// Retries rebuild the event: the id must not change, and must
			// change with the webhook.
			_, again, err := NewPodBoundEvent(tc.policy, tc.pod, tc.uid, tc.webhook, tc.data)
			if err != nil || again != id {
				t.Errorf("rebuilt id = %q, %v; want %q", again, err, id)
			}
			_, other, _ := NewPodBoundEvent(tc.policy, tc.pod, tc.uid, tc.webhook+"-2", tc.data)
			if other == id {
				t.Errorf("id %q is the same for another webhook", id)
			}
		})
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
