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
	"hash"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// A pod's annotations are written by its owner as much as by bindgate, so
// bindgate trusts its own bookkeeping on a pod (which policy took it, that
// PostBind notices are pending) only when the pod also carries a seal: an
// HMAC-SHA256, under a key only the operator holds (a Secret in its
// namespace), of the pod's UID and the policy's name. A pod's owner cannot
// compute it, and cannot move it to another pod (the API server assigns
// UIDs) or another policy. bindgate writes the seal with the policy
// annotation, in the ungate write and on the binding.

// SealKeyBytes is the length of a generated seal key.
const SealKeyBytes = 32

// sealer makes seals under one key. Its pool keeps HMACs keyed with it:
// seals are made for every bind and checked on every informer event of a
// bound pod, and a fresh HMAC costs two hash states and two pads each time.
type sealer struct {
	key  []byte
	macs sync.Pool // of hash.Hash, HMAC-SHA256 under key
}

var sealKey atomic.Pointer[sealer]

// UseSealKey installs the key seals are made and checked with. Until it is
// called, no pod carries a valid seal.
func UseSealKey(key []byte) {
	k := append([]byte(nil), key...)
	s := &sealer{key: k}
	s.macs.New = func() any { return hmac.New(sha256.New, k) }
	sealKey.Store(s)
}

// Seal returns the seal of (uid, policy) under the installed key ("" when
// there is none).
func Seal(uid types.UID, policy string) string {
	s := sealKey.Load()
	if s == nil || len(s.key) == 0 {
		return ""
	}
	m := s.macs.Get().(hash.Hash)
	defer s.macs.Put(m)
	m.Reset()
	return seal(m, uid, policy)
}

// seal writes (uid, policy) into m, a fresh or reset HMAC, and encodes its sum.
func seal(m hash.Hash, uid types.UID, policy string) string {
	m.Write([]byte("bindgate-seal-v1\x00"))
	m.Write([]byte(uid))
	m.Write([]byte{0})
	m.Write([]byte(policy))
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.EncodeToString(m.Sum(sum[:0]))
}

// SealedPolicy returns the policy recorded on pod by bindgate itself: the
// policy annotation, when the pod's seal verifies for its UID and that
// policy. Anything a pod's owner wrote alone yields ("", false).
func SealedPolicy(pod *corev1.Pod) (string, bool) {
	policy := pod.Annotations[bindgatev1alpha1.PolicyAnnotation]
	got := pod.Annotations[bindgatev1alpha1.SealAnnotation]
	if policy == "" || got == "" {
		return "", false
	}
	want := Seal(pod.UID, policy)
	if want == "" || !hmac.Equal([]byte(got), []byte(want)) {
		return "", false
	}
	return policy, true
}

// BoundBy returns the policy under which bindgate bound pod: the pod is
// bound and carries bindgate's sealed policy record. Capacity is charged
// to a policy, and PostBind notices are sent, only for such pods.
func BoundBy(pod *corev1.Pod) (string, bool) {
	if pod.Spec.NodeName == "" {
		return "", false
	}
	return SealedPolicy(pod)
}

// recordAnnotations are the annotations bindgate writes with a pod's
// policy: the policy and its seal.
func recordAnnotations(uid types.UID, policy string, into map[string]string) {
	into[bindgatev1alpha1.PolicyAnnotation] = policy
	if s := Seal(uid, policy); s != "" {
		into[bindgatev1alpha1.SealAnnotation] = s
	}
}
