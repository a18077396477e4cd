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

package postbind

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

func TestPending(t *testing.T) {
	p := &bindgatev1alpha1.BindingPolicy{Spec: bindgatev1alpha1.BindingPolicySpec{PostBind: []bindgatev1alpha1.PostBindWebhook{
		{Name: "audit"}, {Name: "cmdb"},
	}}}
	if got := Pending(p); got != "audit,cmdb" {
		t.Errorf("Pending = %q", got)
	}
	if got := Pending(&bindgatev1alpha1.BindingPolicy{}); got != "" {
		t.Errorf("Pending of a policy without hooks = %q", got)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		bindgatev1alpha1.PostBindPendingAnnotation: "audit, cmdb,,",
	}}}
	if got := PendingHooks(pod); strings.Join(got, "|") != "audit|cmdb" {
		t.Errorf("PendingHooks = %q", got)
	}
	if got := ResultAnnotation("audit"); got != "postbind.scheduling.bindgate.dev/audit" {
		t.Errorf("ResultAnnotation = %q", got)
	}
}

// TestBackoff: the n-th failed attempt of an item waits BaseBackoff
// doubled n-1 times, capped at MaxBackoff, jittered into [d/2, d]; each
// item counts on its own.
func TestBackoff(t *testing.T) {
	base, maxDelay := 100*time.Millisecond, time.Second
	want := []time.Duration{base, 2 * base, 4 * base, 8 * base, maxDelay, maxDelay}
	for range 50 {
		j := jittered[item]{workqueue.NewTypedItemExponentialFailureRateLimiter[item](base, maxDelay)}
		for n, w := range want {
			for _, it := range []item{{Name: "a", UID: "a"}, {Name: "b", UID: "b"}} {
				if got := j.When(it); got < w/2 || got > w {
					t.Fatalf("attempt %d of %s: backoff %s, want within [%s, %s]", n+1, it.Name, got, w/2, w)
				}
			}
		}
		if n := j.NumRequeues(item{Name: "a", UID: "a"}); n != len(want) {
			t.Fatalf("NumRequeues = %d, want %d", n, len(want))
		}
	}
}
