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

package gang

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/ledger"
)

// placingHandle places every pod and records the first `room` of them;
// the rest fail with recordErr.
type placingHandle struct {
	countingHandle
	mu        sync.Mutex
	room      int
	recordErr error
	recorded  int
	forgotten sets.Set[string]
}

func (h *placingHandle) Lock()   {}
func (h *placingHandle) Unlock() {}
func (h *placingHandle) Place(context.Context, *bindgatev1alpha1.BindingPolicy, *corev1.Pod, sets.Set[string]) (string, error) {
	return "n1", nil
}
func (h *placingHandle) Record(context.Context, *bindgatev1alpha1.BindingPolicy, *corev1.Pod, time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.recorded == h.room {
		return h.recordErr
	}
	h.recorded++
	return nil
}
func (h *placingHandle) RecordAll(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pods []*corev1.Pod, at time.Time) []error {
	errs := make([]error, len(pods))
	for i, p := range pods {
		errs[i] = h.Record(ctx, policy, p, at)
	}
	return errs
}
func (h *placingHandle) Forget(_ context.Context, _ *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod) {
	h.forgotten.Insert(pod.Name)
}
func (h *placingHandle) Wake(*corev1.Pod) {}

// TestPlaceTogetherRecordFails: a gang whose records do not all land holds
// nothing; when the policy's status is full the members say so and wait,
// any other failure is an error to retry.
func TestPlaceTogetherRecordFails(t *testing.T) {
	for name, tc := range map[string]struct {
		err      error
		wantCode framework.Code
		wantMsg  string
	}{
		"status full: the members wait, saying why": {
			err:      fmt.Errorf("%w (3, status.reservations maxItems)", ledger.ErrStatusFull),
			wantCode: framework.Unschedulable,
			wantMsg:  "gang: gang g: no room to record 5 more reservations: the BindingPolicy's status records the most reservations it may hold (3, status.reservations maxItems); none reserved (see the policy's ReservationsFull condition)",
		},
		"another failure: an error, retried": {
			err:      errors.New("the API server is away"),
			wantCode: framework.Error,
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := &placingHandle{countingHandle: countingHandle{latest: map[string]string{}}, room: 3, recordErr: tc.err, forgotten: sets.New[string]()}
			var flushes []func()
			c := &Coordinator{Handle: h, Clock: clocktesting.NewFakeClock(time.Unix(1000, 0)), AfterFunc: func(_ time.Duration, f func()) { flushes = append(flushes, f) }}
			pending := members(5)
			c.lock("ns/g").Lock()
			st := c.placeTogether(context.Background(), &bindgatev1alpha1.BindingPolicy{}, Spec{Condition: "gang", Group: "g", MinMember: 5}, pending[0], pending, 0)
			c.lock("ns/g").Unlock()
			if st.Code() != tc.wantCode {
				t.Fatalf("code %v (%s), want %v", st.Code(), st.Message(), tc.wantCode)
			}
			if h.forgotten.Len() != 5 {
				t.Errorf("forgot %v, want every member", sets.List(h.forgotten))
			}
			for _, f := range flushes { // the grace ends
				f()
			}
			if tc.wantMsg != "" {
				for _, m := range pending {
					if diff := cmp.Diff(tc.wantMsg, h.latest[m.Name]); diff != "" {
						t.Errorf("%s told (-want +got):\n%s", m.Name, diff)
					}
				}
			} else if !strings.Contains(st.Message(), "recording gang g (2 of 5 members failed): the API server is away") {
				t.Errorf("status %q does not carry the error", st.Message())
			}
		})
	}
}

// TestGangLocks: the steps of one gang exclude each other; another gang's
// go on meanwhile (150 gangs of 4 arriving together were placed one after
// the other, each waiting for its own status write).
func TestGangLocks(t *testing.T) {
	c := &Coordinator{}
	policy := &bindgatev1alpha1.BindingPolicy{Spec: bindgatev1alpha1.BindingPolicySpec{Permit: &bindgatev1alpha1.Permit{
		Conditions: []bindgatev1alpha1.PermitCondition{{Name: "gang", Gang: &bindgatev1alpha1.GangCondition{MinMember: 2}}},
	}}}
	member := func(name, group string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{bindgatev1alpha1.GroupLabel: group}}}
	}
	// A group whose lock is not a's (the locks are striped).
	other := ""
	for i := 0; other == "" && i < 1000; i++ {
		if g := fmt.Sprintf("b%d", i); c.lock(key("ns", g)) != c.lock(key("ns", "a")) {
			other = g
		}
	}
	if other == "" {
		t.Fatal("1000 other groups share gang a's lock")
	}
	held, release := make(chan struct{}), make(chan struct{})
	go c.Do(policy, member("a1", "a"), func() { close(held); <-release })
	<-held

	otherDone := make(chan struct{})
	go c.Do(policy, member("b1", other), func() { close(otherDone) })
	select {
	case <-otherDone:
	case <-time.After(10 * time.Second):
		t.Fatal("another gang's step waited for gang a's")
	}

	sameDone := make(chan struct{})
	go c.Do(policy, member("a2", "a"), func() { close(sameDone) })
	select {
	case <-sameDone:
		t.Fatal("two steps of gang a ran at once")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case <-sameDone:
	case <-time.After(10 * time.Second):
		t.Fatal("gang a's second step never ran")
	}
}
