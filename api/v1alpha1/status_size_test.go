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

package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// etcdObjectLimit is etcd's default request size limit (--max-request-bytes),
// which bounds a stored object.
const etcdObjectLimit = 1536 * 1024

// longestReservation is a reservation with the longest names the schema
// allows, a UUID and four resources (cpu, memory, ephemeral storage and an
// extended resource with a long name).
func longestReservation(i int) bindgatev1alpha1.Reservation {
	name := fmt.Sprintf("%04d-", i) + strings.Repeat("p", 248)
	deadline := metav1.Now()
	return bindgatev1alpha1.Reservation{
		PodNamespace: strings.Repeat("n", 63), PodName: name,
		PodUID: types.UID(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)),
		Node:   strings.Repeat("x", 253),
		Resources: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1536Mi"),
			corev1.ResourceEphemeralStorage:                               resource.MustParse("10Gi"),
			corev1.ResourceName("example.com/" + strings.Repeat("g", 50)): resource.MustParse("8"),
		},
		ReservedAt: metav1.Now(), PermitDeadline: &deadline,
	}
}

// TestMaxReservationsFit measures the status bound: MaxReservations of the
// longest reservations fit a policy's status with room for the spec, the
// API server stores them, and one more is refused naming the field.
func TestMaxReservationsFit(t *testing.T) {
	ctx := context.Background()
	p := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "full-status"}}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) })
	for i := range bindgatev1alpha1.MaxReservations {
		p.Status.Reservations = append(p.Status.Reservations, longestReservation(i))
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	per := len(raw) / bindgatev1alpha1.MaxReservations
	t.Logf("%d reservations of the longest names: %d bytes (%d per reservation); etcd's default limit %d bytes holds %d",
		bindgatev1alpha1.MaxReservations, len(raw), per, etcdObjectLimit, etcdObjectLimit/per)
	if len(raw) > etcdObjectLimit*2/3 {
		t.Errorf("%d reservations take %d bytes, over two thirds of etcd's %d-byte limit: too little room left for the spec",
			bindgatev1alpha1.MaxReservations, len(raw), etcdObjectLimit)
	}
	if err := env.Client.Status().Update(ctx, p); err != nil {
		t.Fatalf("the API server refused %d reservations: %v", bindgatev1alpha1.MaxReservations, err)
	}
	p.Status.Reservations = append(p.Status.Reservations, longestReservation(bindgatev1alpha1.MaxReservations))
	err = env.Client.Status().Update(ctx, p)
	if err == nil || !strings.Contains(err.Error(), "status.reservations") || !strings.Contains(err.Error(), "must have at most 1000 items") {
		t.Errorf("one more reservation: %v; want refused naming status.reservations", err)
	}
}
