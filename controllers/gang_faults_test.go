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

package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv/faults"
)

// failFirstBinds answers 500 to the first pods/binding POST of each named
// pod in ns, and lets every later one through.
func failFirstBinds(ns string, names ...string) faults.Rule {
	var mu sync.Mutex
	left := map[string]bool{}
	for _, n := range names {
		left[n] = true
	}
	return faults.Rule{Kind: faults.ServerError, Rate: 1, Match: func(r faults.Request) bool {
		if r.Verb != "create" || r.Resource != "pods" || r.Subresource != "binding" || r.Namespace != ns {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if !left[r.Name] {
			return false
		}
		delete(left, r.Name)
		return true
	}}
}

// TestGangMembersBindAfterFailedBind: members of a placed gang whose
// pods/binding POST failed (a 500) after their gate was lifted and they
// were pinned go back to the queue and bind on their nodes, as
// kube-scheduler retries a failed bind; none is left Stranded. In the soak
// run, two members of a gang of three failed their binds together: each
// waited for the other, which (ungated) no longer counted as a member to
// place with it, and both were reported Stranded.
func TestGangMembersBindAfterFailedBind(t *testing.T) {
	for name, failing := range map[string][]string{
		"one member":  {"m1"},
		"two members": {"m1", "m2"},
	} {
		t.Run(name, func(t *testing.T) {
			px, err := faults.Start(env.Config, faults.Config{Seed: 16})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = px.Close() })
			startManagerWithConfig(t, px.Config(), 4)
			pol := uniq("gangbindfail")
			pool(t, pol, withGang(3))
			newNode(uniq(pol+"-node")).label("pool", pol).create(t)
			newNode(uniq(pol+"-node")).label("pool", pol).create(t)
			waitReady(t, pol)
			ns := namespace(t, nil)
			if err := px.SetRules([]faults.Rule{failFirstBinds(ns, failing...)}); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				newPod(ns, fmt.Sprintf("m%d", i)).policy(pol).label(bindgatev1alpha1.GroupLabel, "g").
					req(corev1.ResourceCPU, "1").create(t)
			}
			eventually(t, 30*time.Second, "every member bound", func() (bool, error) {
				return countBound(t, ns) == 3, nil
			})
			if got := px.Counts()[faults.ServerError]; got != int64(len(failing)) {
				t.Errorf("%d binds failed, want %d", got, len(failing))
			}
			for _, p := range listPods(t, ns) {
				if c := podCondition(&p, corev1.PodScheduled); c != nil && c.Reason == bindgatev1alpha1.ReasonStranded {
					t.Errorf("pod %s was reported Stranded: %s", p.Name, c.Message)
				}
				if hasEvent(t, ns, p.Name, bindgatev1alpha1.ReasonStranded, "") {
					t.Errorf("pod %s has a Stranded event: %v", p.Name, events(t, ns, p.Name))
				}
			}
			waitReservationsEmpty(t, pol)
			assertNoOvercommit(t)
		})
	}
}

// TestGangMembersUngatedUnboundBind starts the operator on the state two
// failed binds leave a gang of three in, built directly so that it does not
// depend on timing: one member bound, two ungated by bindgate, pinned and
// unbound, none holding a reservation. The two are placed together again
// and bind; before, each waited for the other ("2/3 members exist") until
// it was reported Stranded.
func TestGangMembersUngatedUnboundBind(t *testing.T) {
	ctx := context.Background()
	pol, ns, node := gangAfterFailedBinds(t, "gangungated", "m1", "m2")
	startManager(t, 4)
	eventually(t, 30*time.Second, "both ungated members bound", func() (bool, error) {
		for _, name := range []string{"m1", "m2"} {
			p := &corev1.Pod{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
				return false, fmt.Errorf("member %s: %w", name, err) // deleted as stranded
			}
			if p.Spec.NodeName != node.Name {
				return false, nil
			}
		}
		return true, nil
	})
	for _, name := range []string{"m1", "m2"} {
		if hasEvent(t, ns, name, bindgatev1alpha1.ReasonStranded, "") {
			t.Errorf("pod %s has a Stranded event: %v", name, events(t, ns, name))
		}
	}
	waitReservationsEmpty(t, pol)
	assertNoOvercommit(t)
}

// TestGangMemberWaitingForItsGangNotStranded: a member ungated by bindgate
// whose gang lost a member before it bound (one bound, one deleted) waits
// for its gang, visibly, on a node that still takes it: it is not reported
// Stranded (nor deleted), however many cycles it waits, and binds once a
// new member arrives. Its waits used to count as cycles it did not fit its
// node.
func TestGangMemberWaitingForItsGangNotStranded(t *testing.T) {
	ctx := context.Background()
	pol, ns, node := gangAfterFailedBinds(t, "gangwait", "m1")
	startManager(t, 4)
	eventually(t, 20*time.Second, "m1 says it waits for its gang", func() (bool, error) {
		return strings.Contains(permittedMessage(t, ns, "m1"), "gang g: 2/3 members exist"), nil
	})
	// Long enough for more than strandedAttempts cycles (backoff 1s, 2s,
	// then the gang's 3s recheck).
	consistently(t, 12*time.Second, "m1 neither deleted nor Stranded", func() bool {
		p := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m1"}, p); err != nil || p.DeletionTimestamp != nil {
			return false
		}
		return !hasEvent(t, ns, "m1", bindgatev1alpha1.ReasonStranded, "")
	})
	newPod(ns, "m3").policy(pol).label(bindgatev1alpha1.GroupLabel, "g").req(corev1.ResourceCPU, "1").create(t)
	eventually(t, 30*time.Second, "m1 and the new member bound", func() (bool, error) {
		return countBound(t, ns) == 3, nil
	})
	if p := getPod(t, ns, "m1"); p.Spec.NodeName != node.Name {
		t.Errorf("m1 bound to %q, want its pinned node %s", p.Spec.NodeName, node.Name)
	}
	waitReservationsEmpty(t, pol)
	assertNoOvercommit(t)
}

// gangAfterFailedBinds builds the state failed binds leave a gang of three
// in: a new gang policy (named after prefix) over a new one-node pool, and
// in a new namespace gang "g" with member m0 bound to the node and each of
// ungated ungated by bindgate, pinned to the node, unbound and holding no
// reservation. It returns the policy, the namespace and the node.
func gangAfterFailedBinds(t *testing.T, prefix string, ungated ...string) (pol, ns string, node *corev1.Node) {
	t.Helper()
	pol = uniq(prefix)
	pool(t, pol, withGang(3))
	node = newNode(uniq(pol+"-node")).label("pool", pol).create(t)
	ns = namespace(t, nil)
	bound := newPod(ns, "m0").policy(pol).label(bindgatev1alpha1.GroupLabel, "g").req(corev1.ResourceCPU, "1").p
	bound.Spec.SchedulingGates = nil
	bound.Spec.NodeName = node.Name
	if err := env.Client.Create(context.Background(), bound); err != nil {
		t.Fatal(err)
	}
	for _, name := range ungated {
		p := strandPod(t, ns, name, pol, node.Name, true)
		p.Labels[bindgatev1alpha1.GroupLabel] = "g"
		if err := env.Client.Update(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	return pol, ns, node
}
