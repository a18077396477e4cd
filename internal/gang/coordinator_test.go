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
			err:      fmt.Errorf("%w (1000, status.reservations maxItems)", ledger.ErrStatusFull),
			wantCode: framework.Unschedulable,
			wantMsg:  "gang: gang g: the policy's status has no room to record 5 more reservations (at most 1000; see its ReservationsFull condition), none reserved",
		},
		"another failure: an error, retried": {
			err:      errors.New("the API server is away"),
			wantCode: framework.Error,
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := &placingHandle{countingHandle: countingHandle{latest: map[string]string{}}, room: 3, recordErr: tc.err, forgotten: sets.New[string]()}
			c := &Coordinator{Handle: h, Clock: clocktesting.NewFakeClock(time.Unix(1000, 0)), AfterFunc: func(time.Duration, func()) {}}
			pending := members(5)
			c.mu.Lock()
			st := c.placeTogether(context.Background(), &bindgatev1alpha1.BindingPolicy{}, Spec{Condition: "gang", Group: "g", MinMember: 5}, pending[0], pending, 0)
			c.mu.Unlock()
			if st.Code() != tc.wantCode {
				t.Fatalf("code %v (%s), want %v", st.Code(), st.Message(), tc.wantCode)
			}
			if h.forgotten.Len() != 5 {
				t.Errorf("forgot %v, want every member", sets.List(h.forgotten))
			}
			if tc.wantMsg != "" {
				if diff := cmp.Diff(tc.wantMsg, h.latest["m0"]); diff != "" {
					t.Errorf("m0 told (-want +got):\n%s", diff)
				}
			} else if !strings.Contains(st.Message(), "recording gang g (2 of 5 members failed): the API server is away") {
				t.Errorf("status %q does not carry the error", st.Message())
			}
		})
	}
}
