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
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestUsesClaim(t *testing.T) {
	name := func(s string) *string { return &s }
	for desc, tc := range map[string]struct {
		pod  corev1.Pod
		want bool
	}{
		"by name": {
			pod:  corev1.Pod{Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: name("c1")}}}},
			want: true,
		},
		"another claim": {
			pod: corev1.Pod{Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: name("c2")}}}},
		},
		"the pod's entry name is not the claim's": {
			pod: corev1.Pod{Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "c1", ResourceClaimTemplateName: name("t")}}}},
		},
		"generated from a template": {
			pod: corev1.Pod{
				Spec:   corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: name("t")}}},
				Status: corev1.PodStatus{ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: name("c1")}}},
			},
			want: true,
		},
		"no claims": {},
	} {
		t.Run(desc, func(t *testing.T) {
			if got := usesClaim(&tc.pod, "c1"); got != tc.want {
				t.Errorf("usesClaim = %v, want %v", got, tc.want)
			}
		})
	}
}
