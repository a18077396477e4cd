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
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/bindgate/bindgate/internal/framework"
)

func members(n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("m%d", i), UID: types.UID(fmt.Sprintf("u%d", i))}}
	}
	return out
}

// TestNotices: a gang's members are first told after the grace, then at
// once when an interval has passed; within the grace or an interval the
// latest message is held back for one flush at its end, which a placed
// gang (drop) cancels.
func TestNotices(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type step struct {
		op      string // note, take, drop
		at      time.Duration
		msg     string
		n       int
		tellNow bool
		arm     time.Duration
		took    string
	}
	for name, steps := range map[string][]step{
		"the first is held back for the grace": {
			{op: "note", msg: "a", n: 2, arm: time.Second},
			{op: "take", at: time.Second, took: "a"},
		},
		"a gang placed within the grace is never told": {
			{op: "note", msg: "1/2", n: 1, arm: time.Second},
			{op: "drop", at: 10 * time.Millisecond},
			{op: "take", at: time.Second},
		},
		"a burst is held back and flushed once, with the latest message": {
			{op: "note", msg: "1/4", n: 1, arm: time.Second},
			{op: "note", at: 10 * time.Millisecond, msg: "2/4", n: 2},
			{op: "note", at: 20 * time.Millisecond, msg: "3/4", n: 3},
			{op: "take", at: time.Second, took: "3/4"},
			{op: "take", at: time.Second},
		},
		"after the interval, told at once again": {
			{op: "note", msg: "1/4", n: 1, arm: time.Second},
			{op: "take", at: time.Second, took: "1/4"},
			{op: "note", at: 2500 * time.Millisecond, msg: "2/4", n: 2, tellNow: true},
		},
		"a flush starts a new interval": {
			{op: "note", msg: "1/9", n: 1, arm: time.Second},
			{op: "take", at: time.Second, took: "1/9"},
			{op: "note", at: 1100 * time.Millisecond, msg: "2/9", n: 2, arm: 900 * time.Millisecond},
			{op: "take", at: 2 * time.Second, took: "2/9"},
			{op: "note", at: 2500 * time.Millisecond, msg: "3/9", n: 3, arm: 500 * time.Millisecond},
		},
		"a placed gang's held message is not told": {
			{op: "note", msg: "1/2", n: 1, arm: time.Second},
			{op: "take", at: time.Second, took: "1/2"},
			{op: "note", at: 1010 * time.Millisecond, msg: "2/2", n: 1, arm: 990 * time.Millisecond},
			{op: "drop", at: 1020 * time.Millisecond},
			{op: "take", at: 2 * time.Second},
			{op: "note", at: 2100 * time.Millisecond, msg: "1/2", n: 1, arm: time.Second},
		},
		"the interval grows with the members told": {
			{op: "note", msg: "a", n: 300, arm: time.Second},
			{op: "take", at: time.Second, took: "a"},
			{op: "note", at: 5 * time.Second, msg: "b", n: 300, tellNow: true},
			{op: "note", at: 6 * time.Second, msg: "c", n: 300, arm: 2 * time.Second},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var n notices
			for i, s := range steps {
				now := t0.Add(s.at)
				switch s.op {
				case "note":
					tellNow, arm := n.note("ns/g", now, s.msg, members(s.n))
					if diff := cmp.Diff([]any{s.tellNow, s.arm}, []any{tellNow, arm}); diff != "" {
						t.Errorf("step %d (note %q) tellNow, arm (-want +got):\n%s", i, s.msg, diff)
					}
				case "take":
					msg, _ := n.take("ns/g", now)
					if msg != s.took {
						t.Errorf("step %d: took %q, want %q", i, msg, s.took)
					}
				case "drop":
					n.drop("ns/g")
				}
			}
		})
	}
}

// countingHandle records what members were told; the rest of Handle is
// not used by wait.
type countingHandle struct {
	Handle
	told   int
	latest map[string]string
}

func (h *countingHandle) Waiting(_ context.Context, pod *corev1.Pod, msg string) {
	h.told++
	h.latest[pod.Name] = msg
}

// TestWaitBurst: a gang of 300 whose members arrive one after another, 5ms
// apart, tells no member within the grace (the first 200 arrivals), then
// every member at most once per interval; at the end every member says the
// latest count.
func TestWaitBurst(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	h := &countingHandle{latest: map[string]string{}}
	type timer struct {
		at time.Time
		f  func()
	}
	var due []timer
	c := &Coordinator{Handle: h, Clock: clk, AfterFunc: func(d time.Duration, f func()) { due = append(due, timer{clk.Now().Add(d), f}) }}
	spec := Spec{Condition: "gang", Group: "g", MinMember: 301}
	all := members(300)
	start := clk.Now()
	for i := range all {
		clk.Step(5 * time.Millisecond)
		msg := fmt.Sprintf("gang g: %d/301 members exist, none reserved", i+1)
		c.lock("ns/g").Lock()
		st := c.wait(context.Background(), spec, all[i], all[:i+1], msg)
		c.lock("ns/g").Unlock()
		if st.Code() != framework.Unschedulable || st.Message() != msg {
			t.Fatalf("wait returned %v %q", st.Code(), st.Message())
		}
		// A flush runs once the clock reaches it.
		for len(due) > 0 && !clk.Now().Before(due[0].at) {
			f := due[0].f
			due = due[1:]
			f()
		}
		if clk.Now().Sub(start) < noticeGrace && h.told > 0 {
			t.Fatalf("%d conditions written within the grace (member %d)", h.told, i)
		}
	}
	clk.Step(time.Hour)
	for len(due) > 0 {
		f := due[0].f
		due = due[1:]
		f()
	}
	t.Logf("%d conditions written", h.told)
	if h.told > 1000 {
		t.Errorf("%d conditions written for a burst of 300 members, want at most 1000 (45,150 when every arrival tells everyone)", h.told)
	}
	want := "gang: gang g: 300/301 members exist, none reserved"
	stale := sets.New[string]()
	for _, m := range all {
		if h.latest[m.Name] != want {
			stale.Insert(m.Name + ": " + h.latest[m.Name])
		}
	}
	if stale.Len() > 0 {
		t.Errorf("%d members do not say the latest count: %v", stale.Len(), sets.List(stale)[:min(3, stale.Len())])
	}
}
