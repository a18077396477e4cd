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

package scheduler

import (
	"encoding/json"
	"hash/fnv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// RejectedRetryAfter is how long a pod rejected by a permit timeout
// (onTimeout: Reject) waits before it is tried again when nothing changes:
// kube-scheduler's limit for pods in its unschedulable queue
// (podMaxInUnschedulablePodsDuration).
const RejectedRetryAfter = 5 * time.Minute

// Bounds of the backoff after permit timeouts with onTimeout: Retry.
const (
	permitRetryBase = time.Second
	permitRetryMax  = 5 * time.Minute
)

// permitHold keeps a pod whose permit wait timed out from taking a new
// reservation.
type permitHold struct {
	until time.Time
	// rejected marks the hold of onTimeout: Reject. It ends early when
	// something that may change the answer changed since: the pod's
	// labels, annotations or spec, the policy's generation, or the cluster
	// (ClusterChanged).
	rejected bool
	seen     holdKey
}

// holdKey is what a rejected pod's answer depends on.
type holdKey struct {
	pod       uint64
	policyUID types.UID
	policyGen int64
	epoch     uint64
}

// ClusterChanged tells the scheduler that nodes, claims or bound pods
// changed in a way that may let a rejected pod through: pods rejected by a
// permit timeout are tried again at their next cycle.
func (s *Scheduler) ClusterChanged() { s.clusterEpoch.Add(1) }

func (s *Scheduler) holdKey(pod *corev1.Pod, policy *bindgatev1alpha1.BindingPolicy) holdKey {
	h := fnv.New64a()
	// encoding/json writes map keys sorted: equal content, equal bytes.
	b, _ := json.Marshal([]any{pod.Labels, pod.Annotations, pod.Spec})
	_, _ = h.Write(b)
	return holdKey{pod: h.Sum64(), policyUID: policy.UID, policyGen: policy.Generation, epoch: s.clusterEpoch.Load()}
}

// holdAfterReject holds a pod rejected by a permit timeout until something
// that may change the answer changes, or RejectedRetryAfter passes.
func (s *Scheduler) holdAfterReject(pod *corev1.Pod, policy *bindgatev1alpha1.BindingPolicy) time.Duration {
	now := s.Clock.Now()
	s.permitRetries().Forget(pod.UID)
	s.permitHolds.Store(pod.UID, permitHold{
		until: now.Add(RejectedRetryAfter), rejected: true, seen: s.holdKey(pod, policy),
	})
	s.pruneHolds(now)
	return RejectedRetryAfter
}

// permitRetries counts each pod's permit timeouts in a row (onTimeout:
// Retry) and says how long it waits: client-go's per-item exponential rate
// limiter, 1s, 2s, 4s ... at most 5m.
func (s *Scheduler) permitRetries() workqueue.TypedRateLimiter[types.UID] {
	s.permitRetriesOnce.Do(func() {
		s.permitRetryLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](permitRetryBase, permitRetryMax)
	})
	return s.permitRetryLimiter
}

// holdAfterPermitTimeout starts the pod's backoff after a permit timeout
// with onTimeout: Retry, growing with each timeout in a row.
func (s *Scheduler) holdAfterPermitTimeout(uid types.UID) time.Duration {
	now := s.Clock.Now()
	d := s.permitRetries().When(uid)
	s.permitHolds.Store(uid, permitHold{until: now.Add(d)})
	s.pruneHolds(now)
	return d
}

// clearPermitHold ends the pod's hold and its run of timeouts (its permit
// conditions approved).
func (s *Scheduler) clearPermitHold(uid types.UID) {
	s.permitHolds.Delete(uid)
	s.permitRetries().Forget(uid)
}

// pruneHolds forgets pods whose hold ended long ago (deleted, or bound
// elsewhere), with their run of timeouts.
func (s *Scheduler) pruneHolds(now time.Time) {
	s.permitHolds.Range(func(k, v any) bool {
		if now.Sub(v.(permitHold).until) > 15*time.Minute {
			s.clearPermitHold(k.(types.UID))
		}
		return true
	})
}

// permitHoldOff returns how long the pod must still wait before it may
// take a new reservation under policy (0: it may).
func (s *Scheduler) permitHoldOff(pod *corev1.Pod, policy *bindgatev1alpha1.BindingPolicy) time.Duration {
	v, ok := s.permitHolds.Load(pod.UID)
	if !ok {
		return 0
	}
	h := v.(permitHold)
	left := max(h.until.Sub(s.Clock.Now()), 0)
	if h.rejected && (left == 0 || s.holdKey(pod, policy) != h.seen) {
		s.permitHolds.Delete(pod.UID)
		return 0
	}
	return left
}
