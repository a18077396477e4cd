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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// noticeGrace is how long a gang waits before its members are first told
// why: a gang whose members arrive within it is placed without a single
// condition write (members arriving 10ms apart wrote one Permitted=False
// each, up to 1.6 writes per pod, for gangs that waited well under a
// second). noticeEvery is how often, at most, they are told again after
// that, per member told: a gang of 300 that gains a member every few
// milliseconds had every member's condition rewritten on every arrival
// (45,000 status writes, half a minute of them, under the gang lock).
const (
	noticeGrace     = time.Second
	noticeEvery     = time.Second
	noticePerMember = 10 * time.Millisecond
)

// notices throttles what a waiting gang tells its members: nothing in the
// first noticeGrace, then at most once per interval (noticeEvery, or
// noticePerMember per member told when that is longer), the latest message
// to the latest members; a message held back is told when the grace or the
// interval ends (flush), unless the gang was placed meanwhile (drop).
type notices struct {
	mu sync.Mutex
	by map[string]*notice
}

type notice struct {
	// last is when the other members were last told.
	last time.Time
	// every is the interval that started at last (the grace, before the
	// members were first told).
	every time.Duration
	// msg and members are held back for the flush ("": nothing held).
	msg     string
	members []*corev1.Pod
	// armed says a flush is due.
	armed bool
}

// interval is how long after telling n members they are told again.
func interval(n int) time.Duration {
	return max(noticeEvery, time.Duration(n)*noticePerMember)
}

// note decides for a gang (k) whose members are to be told msg at now:
// tell them now (true), or hold it back; arm > 0 then asks the caller to
// flush k after that long (no flush is due yet). A gang not told before
// is held back for noticeGrace.
func (n *notices) note(k string, now time.Time, msg string, members []*corev1.Pod) (tellNow bool, arm time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.by == nil {
		n.by = map[string]*notice{}
	}
	e := n.by[k]
	if e == nil {
		n.prune(now)
		n.by[k] = &notice{last: now, every: noticeGrace, msg: msg, members: members, armed: true}
		return false, noticeGrace
	}
	if !e.armed && now.Sub(e.last) >= e.every {
		n.by[k] = &notice{last: now, every: interval(len(members))}
		return true, 0
	}
	e.msg, e.members = msg, members
	if e.armed {
		return false, 0
	}
	e.armed = true
	return false, max(e.last.Add(e.every).Sub(now), time.Millisecond)
}

// take returns what was held back for k and starts a new interval at now.
func (n *notices) take(k string, now time.Time) (string, []*corev1.Pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e := n.by[k]
	if e == nil || !e.armed {
		return "", nil
	}
	msg, members := e.msg, e.members
	*e = notice{last: now, every: interval(len(members))}
	return msg, members
}

// drop forgets k: what was held back is not told.
func (n *notices) drop(k string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.by, k)
}

// prune forgets gangs told long ago with nothing held back, so that gangs
// that wait and go away do not pile up. The caller holds mu.
func (n *notices) prune(now time.Time) {
	if len(n.by) < 1024 {
		return
	}
	for k, e := range n.by {
		if !e.armed && now.Sub(e.last) >= e.every {
			delete(n.by, k)
		}
	}
}
