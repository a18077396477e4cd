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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/controllers"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/options"
)

// strandPod creates a pod as an operator leaves it when it stops between
// lifting the gate (pinning the pod to node, recording the sealed policy)
// and the bind: ungated, pinned, unbound.
func strandPod(t *testing.T, ns, name, policy, node string, owned bool) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	key, err := controllers.LoadSealKey(ctx, env.Client, env.Client, types.NamespacedName{Namespace: operatorNamespace, Name: options.DefaultSealKeySecret})
	if err != nil {
		t.Fatal(err)
	}
	bind.UseSealKey(key) // the key the test's operator loads too
	p := newPod(ns, name).policy(policy).req(corev1.ResourceCPU, "1").p
	p.Spec.SchedulingGates = nil
	p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	if owned {
		p.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-123", UID: types.UID("rs-" + name), Controller: new(true),
		}}
	}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	// Record the policy as the ungate write does (the UID is the API
	// server's).
	p.Annotations = map[string]string{
		bindgatev1alpha1.PolicyAnnotation: policy, bindgatev1alpha1.SealAnnotation: bind.Seal(p.UID, policy),
	}
	if err := env.Client.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStrandedPodsRecovered: a pod left ungated and pinned to a node that
// was deleted before its bind, or on which it no longer fits, is not left
// Pending forever: with a controller owner it is deleted (its owner makes
// a new one), without one it says what to do.
func TestStrandedPodsRecovered(t *testing.T) {
	ctx := context.Background()
	pname := uniq("stranded")
	pool(t, pname)
	gone := newNode(uniq(pname)).label("pool", pname).create(t)
	full := newNode(uniq(pname)).label("pool", pname).alloc(corev1.ResourceCPU, "1").create(t)
	newNode(uniq(pname)).label("pool", pname).create(t) // room elsewhere: no use to a pinned pod
	ns := namespace(t, nil)
	owned := strandPod(t, ns, "owned", pname, gone.Name, true)
	unowned := strandPod(t, ns, "unowned", pname, gone.Name, false)
	crowded := strandPod(t, ns, "crowded", pname, full.Name, false)
	// The node is deleted between the ungate and the bind; another pod
	// takes the last CPU of the other one.
	if err := env.Client.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	hog := newPod(ns, "hog").req(corev1.ResourceCPU, "1").p
	hog.Spec.SchedulingGates = nil
	hog.Spec.NodeName = full.Name
	if err := env.Client.Create(ctx, hog); err != nil {
		t.Fatal(err)
	}

	startManager(t, 4) // the operator (re)starts

	eventually(t, 20*time.Second, "the owned pod deleted", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(owned), &corev1.Pod{})
		return apierrors.IsNotFound(err), nil
	})
	eventually(t, 10*time.Second, "a Stranded event naming the node and the owner", func() (bool, error) {
		return hasEvent(t, ns, "owned", bindgatev1alpha1.ReasonStranded, "pinned to node "+gone.Name+", which no longer exists; its ReplicaSet web-123 creates a new one"), nil
	})
	strandedCondition := func(name string) *corev1.PodCondition {
		for _, c := range getPod(t, ns, name).Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == bindgatev1alpha1.ReasonStranded {
				return &c
			}
		}
		return nil
	}
	eventually(t, 20*time.Second, "the unowned pod told what to do", func() (bool, error) {
		return strandedCondition(unowned.Name) != nil, nil
	})
	if c := strandedCondition(unowned.Name); c.Message != "it is pinned to node "+gone.Name+", which no longer exists; the pin cannot be lifted: delete the pod and create it again" {
		t.Errorf("condition message %q", c.Message)
	}
	eventually(t, 30*time.Second, "the pod that no longer fits told what to do", func() (bool, error) {
		return strandedCondition(crowded.Name) != nil, nil
	})
	eventually(t, 10*time.Second, "a Stranded event for the crowded pod", func() (bool, error) {
		return hasEvent(t, ns, "crowded", bindgatev1alpha1.ReasonStranded, "pinned to node "+full.Name+", where it no longer fits"), nil
	})
	for _, name := range []string{"unowned", "crowded"} {
		if p := getPod(t, ns, name); p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			t.Errorf("unowned pod %s bound to %q or deleted", name, p.Spec.NodeName)
		}
	}
	waitReservationsEmpty(t, pname)
}
