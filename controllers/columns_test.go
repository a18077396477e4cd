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
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// policyTable reads the policy as the API server prints it for kubectl
// (`Accept: application/json;as=Table`): column name -> (priority, cell).
func policyTable(t *testing.T, name string) map[string]string {
	t.Helper()
	body, err := env.Clientset.CoreV1().RESTClient().Get().
		AbsPath("/apis/scheduling.bindgate.dev/v1alpha1/bindingpolicies", name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET as Table: %v: %s", err, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
		t.Fatalf("table: %d rows, %d columns", len(table.Rows), len(table.ColumnDefinitions))
	}
	out := map[string]string{}
	for i, c := range table.ColumnDefinitions {
		cell := table.Rows[0].Cells[i]
		if b, err := json.Marshal(cell); err == nil && cell != nil {
			if s, ok := cell.(string); ok {
				out[fmt.Sprintf("%d %s", c.Priority, c.Name)] = s
			} else {
				out[fmt.Sprintf("%d %s", c.Priority, c.Name)] = string(b)
			}
		} else {
			out[fmt.Sprintf("%d %s", c.Priority, c.Name)] = "<none>"
		}
	}
	return out
}

// TestPolicyStatusCountsAndColumns: the policy's status counts its bound
// and waiting pods and what it uses; `kubectl get bp` shows them, zeros
// included, and `-o wide` adds used and capacity.
func TestPolicyStatusCountsAndColumns(t *testing.T) {
	startManager(t, 4)
	pol := uniq("counted")
	pool(t, pol, withPermit(approvedExpr, time.Minute, bindgatev1alpha1.PermitTimeoutReject), func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.Priority = 7
		p.Spec.Capacity = map[corev1.ResourceName]bindgatev1alpha1.CapacityQuantity{corev1.ResourceCPU: {Quantity: resource.MustParse("2")}}
	})
	idle := uniq("idle")
	pool(t, idle)
	newNode(uniq(pol+"-node")).label("pool", pol).create(t)
	waitReady(t, pol)
	waitReady(t, idle)

	// An idle policy shows zeros, not blanks.
	want := map[string]string{"0 Priority": "0", "0 Ready": "True", "0 Reserved": "0", "0 Waiting": "0", "0 Bound": "0", "1 Used": "<none>", "1 Capacity": "<none>",
		"1 Gangs": "<none>", "1 Gang domains": "<none>"}
	got := policyTable(t, idle)
	delete(got, "0 Name")
	delete(got, "0 Age")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("idle policy columns (-want +got):\n%s", diff)
	}

	ns := namespace(t, nil)
	approved := newPod(ns, "approved").policy(pol).req(corev1.ResourceCPU, "500m")
	approved.p.Annotations = map[string]string{approvedAnnotation: "true"}
	approved.create(t)
	newPod(ns, "waiting").policy(pol).req(corev1.ResourceCPU, "250m").create(t)
	eventually(t, 15*time.Second, "status counts one bound, one waiting pod", func() (bool, error) {
		st := getPolicy(t, pol).Status
		return st.BoundPods == 1 && st.WaitingPods == 1 && st.ReservedPods == 1 &&
			st.Used.Cpu().Cmp(resource.MustParse("750m")) == 0, nil
	})
	want = map[string]string{"0 Priority": "7", "0 Ready": "True", "0 Reserved": "1", "0 Waiting": "1", "0 Bound": "1",
		"1 Used": `{"cpu":"750m"}`, "1 Capacity": `{"cpu":"2"}`, "1 Gangs": "<none>", "1 Gang domains": "<none>"}
	got = policyTable(t, pol)
	delete(got, "0 Name")
	delete(got, "0 Age")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("busy policy columns (-want +got):\n%s", diff)
	}

	// A bound pod that ends stops counting.
	p := getPod(t, ns, "approved")
	p.Status.Phase = corev1.PodSucceeded
	if err := env.Client.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "the finished pod no longer counted", func() (bool, error) {
		st := getPolicy(t, pol).Status
		return st.BoundPods == 0 && st.Used.Cpu().Cmp(resource.MustParse("250m")) == 0, nil
	})
}
