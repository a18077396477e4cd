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
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/ledger"
)

// Recheck is the ledger's check of a fresh status read (after a conflict,
// or on every write when several replicas may be active): count the
// status's reservations and refuse pending ones that no longer fit their
// node. live reads from the API server.
//
// The status read may already lack a reservation that the other replica
// released after binding its pod, while this process's informer has not
// shown that pod bound yet: the capacity would look free. So the pods bound
// to each node in question are read live too (after the status, so they
// include every bind whose release the status shows) and counted until the
// informer catches up.
func (h *Handlers) Recheck(live client.Reader) ledger.Validator {
	return func(ctx context.Context, p *bindgatev1alpha1.BindingPolicy, adds []*bindgatev1alpha1.Reservation) map[types.UID]error {
		for i := range p.Status.Reservations {
			h.Cache.AddRecorded(p.Name, &p.Status.Reservations[i], h.ReservedPod)
		}
		lost := map[types.UID]error{}
		// A pod another replica has recorded on another node is its: two
		// replicas that placed the same pod must not both go on (the later
		// record would overwrite the earlier one, and the node the other
		// replica binds to would look free to this one).
		recorded := make(map[types.UID]string, len(p.Status.Reservations))
		for _, r := range p.Status.Reservations {
			recorded[r.PodUID] = r.Node
		}
		for _, a := range adds {
			if n, ok := recorded[a.PodUID]; ok && n != a.Node {
				lost[a.PodUID] = fmt.Errorf("%w: pod %s/%s is already reserved on node %s", ledger.ErrLostRace, a.PodNamespace, a.PodName, n)
			}
		}
		bound := map[string][]corev1.Pod{}
		for _, a := range adds {
			if _, listed := bound[a.Node]; listed {
				continue
			}
			var pods corev1.PodList
			if err := live.List(ctx, &pods, client.MatchingFields{"spec.nodeName": a.Node}); err != nil {
				// Unsure what is on the node: let the cycle try again.
				for _, b := range adds {
					if b.Node == a.Node {
						lost[b.PodUID] = fmt.Errorf("%w: listing the pods on node %s: %w", ledger.ErrLostRace, a.Node, err)
					}
				}
				continue
			}
			bound[a.Node] = pods.Items
			for i := range pods.Items {
				h.Cache.CountBound(&pods.Items[i])
			}
		}
		for _, a := range adds {
			if _, done := lost[a.PodUID]; done {
				continue
			}
			// The status's records and the pods listed count on their
			// node whatever the cache holds now: a pod it counts on
			// another node (placed there by this process, recorded here
			// by the other replica) or a hold released meanwhile would
			// leave room that is not there.
			if over := h.Cache.OvercommittedWith(a.Node, p.Status.Reservations, bound[a.Node]); len(over) > 0 {
				lost[a.PodUID] = fmt.Errorf("%w on node %s (%v)", ledger.ErrLostRace, a.Node, over)
			}
		}
		return lost
	}
}
