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

package ledger

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// Durability is the rule that says which reservations are recorded in
// their policy's status before the cycle goes on: those are the ones a
// restart keeps and other replicas see. The others are held in memory only
// and bind at once.
type Durability struct {
	// All records every reservation: several replicas schedule at the same
	// time (no leader election), so each must see what the others hold.
	All bool
}

// MustRecord says whether a new reservation under p is recorded before the
// cycle goes on: always with All, else when the pod may wait in Permit (a
// condition other than gang: a gang is placed whole before Permit and its
// condition never waits) or be held by a bind webhook.
func (d Durability) MustRecord(p *bindgatev1alpha1.BindingPolicy) bool {
	if d.All {
		return true
	}
	if p.Spec.Permit != nil {
		for _, c := range p.Spec.Permit.Conditions {
			if c.Gang == nil {
				return true
			}
		}
	}
	return p.Spec.Bind != nil && p.Spec.Bind.Webhook != nil
}

// NewReservation is the ledger entry of pod reserved on node with requests
// since reservedAt; deadline, when set, is its permit deadline.
func NewReservation(pod *corev1.Pod, node string, requests corev1.ResourceList, reservedAt time.Time, deadline *metav1.Time) *bindgatev1alpha1.Reservation {
	return &bindgatev1alpha1.Reservation{
		PodNamespace: pod.Namespace, PodName: pod.Name, PodUID: pod.UID, Node: node,
		Resources: requests, ReservedAt: metav1.NewTime(reservedAt), PermitDeadline: deadline,
	}
}
