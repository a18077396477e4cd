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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/controllers"
	"github.com/bindgate/bindgate/internal/permit"
)

func withVolumes(p *bindgatev1alpha1.BindingPolicy) {
	p.Spec.Permit = &bindgatev1alpha1.Permit{
		Timeout:    &metav1.Duration{Duration: 60 * time.Second},
		Conditions: []bindgatev1alpha1.PermitCondition{{Name: "volumes", Volumes: &bindgatev1alpha1.VolumesCondition{}}},
	}
}

func wffcClass(t *testing.T) string {
	t.Helper()
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: uniq("wffc")},
		Provisioner:       "example.com/fake",
		VolumeBindingMode: &mode,
	}
	if err := env.Client.Create(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), sc) })
	return sc.Name
}

func createClaim(t *testing.T, ns, name, class, volume string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
			VolumeName: volume,
		},
	}
	if class != "" {
		pvc.Spec.StorageClassName = &class
	}
	if err := env.Client.Create(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
	return pvc
}

// provision does what a provisioner and the PV controller do for a claim:
// a volume reachable from node only, bound to the claim both ways.
func provision(t *testing.T, ns, name, node string) *corev1.PersistentVolume {
	t.Helper()
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: uniq("pv"), Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "example.com/fake"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/" + name}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name, UID: pvc.UID},
			NodeAffinity:           nodeAffinity(node),
		},
	}
	if pvc.Spec.StorageClassName != nil {
		pv.Spec.StorageClassName = *pvc.Spec.StorageClassName
	}
	if err := env.Client.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pv) })
	pv.Status.Phase = corev1.VolumeBound
	if err := env.Client.Status().Update(ctx, pv); err != nil {
		t.Fatal(err)
	}
	bindClaim(t, ns, name, pv.Name)
	return pv
}

// bindClaim binds a claim to a volume as the PV controller does.
func bindClaim(t *testing.T, ns, name, volume string) {
	t.Helper()
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
		t.Fatal(err)
	}
	pvc.Spec.VolumeName = volume
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations["pv.kubernetes.io/bind-completed"] = "yes"
	pvc.Annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
	if err := env.Client.Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	pvc.Status.Capacity = pvc.Spec.Resources.Requests
	if err := env.Client.Status().Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
}

func nodeAffinity(node string) *corev1.VolumeNodeAffinity {
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
		}},
	}}}}
}

func podScheduledMessage(t *testing.T, ns, name string) string {
	t.Helper()
	for _, c := range getPod(t, ns, name).Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return string(c.Status) + "/" + c.Reason + ": " + c.Message
		}
	}
	return ""
}

func (b *podBuilder) claim(name string) *podBuilder {
	b.p.Spec.Volumes = append(b.p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
	}})
	return b
}

func TestPermitVolumesWaitForFirstConsumer(t *testing.T) {
	startManager(t, 4)
	pol := uniq("vol")
	pool(t, pol, withVolumes)
	newNode(uniq(pol+"-node")).label("pool", pol).create(t)
	newNode(uniq(pol+"-node")).label("pool", pol).create(t)
	waitReady(t, pol)
	class := wffcClass(t)
	ns := namespace(t, nil)
	createClaim(t, ns, "data", class, "")
	newPod(ns, "a").policy(pol).claim("data").create(t)
	newPod(ns, "missing").policy(pol).claim("nope").create(t)
	createClaim(t, ns, "doomed", class, "")
	newPod(ns, "lost").policy(pol).claim("doomed").create(t)

	eventually(t, 10*time.Second, "pod a waiting for its claim", func() (bool, error) {
		return permittedMessage(t, ns, "a") == "False/Waiting: volumes: data not bound", nil
	})
	var reserved string
	for _, r := range getPolicy(t, pol).Status.Reservations {
		if r.PodName == "a" && r.PodNamespace == ns {
			reserved = r.Node
		}
	}
	if reserved == "" {
		t.Fatal("pod a holds no recorded reservation")
	}
	eventually(t, 5*time.Second, "selected-node annotation", func() (bool, error) {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "data"}, pvc); err != nil {
			return false, err
		}
		return pvc.Annotations[permit.AnnSelectedNode] == reserved, nil
	})
	// A claim that does not exist: kube-scheduler's VolumeBinding refuses
	// the pod in PreFilter, in its words.
	eventually(t, 10*time.Second, "missing claim reported", func() (bool, error) {
		return strings.Contains(podScheduledMessage(t, ns, "missing"), `False/Unschedulable: 0/`) &&
			strings.Contains(podScheduledMessage(t, ns, "missing"), `persistentvolumeclaim "nope" not found`), nil
	})

	// The claim is deleted while its pod waits: the pod is rejected.
	eventually(t, 10*time.Second, "pod lost waiting", func() (bool, error) {
		return strings.Contains(permittedMessage(t, ns, "lost"), "doomed not bound"), nil
	})
	if err := env.Client.Delete(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed"},
	}); err != nil {
		t.Fatal(err)
	}

	provision(t, ns, "data", reserved)
	boundAt := time.Now()
	eventually(t, 5*time.Second, "pod a bound to the reserved node", func() (bool, error) {
		return getPod(t, ns, "a").Spec.NodeName == reserved, nil
	})
	t.Logf("bound %v after the claim", time.Since(boundAt))
	eventually(t, 10*time.Second, "pod lost rejected", func() (bool, error) {
		return strings.Contains(permittedMessage(t, ns, "lost"), "False/Rejected: rejected by permit condition volumes: claim doomed lost"), nil
	})
	if p := getPod(t, ns, "lost"); p.Spec.NodeName != "" {
		t.Errorf("pod of a lost claim bound to %s", p.Spec.NodeName)
	}
}

// TestVolumeBindingNodeAffinity: a claim bound to a local volume takes the
// pod to the volume's node (kube-scheduler's VolumeBinding Filter).
func TestVolumeBindingNodeAffinity(t *testing.T) {
	startManager(t, 4)
	pol := uniq("volaff")
	pool(t, pol, withVolumes)
	// Both nodes are empty: the volume decides.
	newNode(pol+"-a").label("pool", pol).create(t)
	b := newNode(pol+"-b").label("pool", pol).create(t)
	waitReady(t, pol)
	ns := namespace(t, nil)
	createClaim(t, ns, "local", "", "")
	provision(t, ns, "local", b.Name)
	newPod(ns, "p").policy(pol).claim("local").create(t)
	eventually(t, 10*time.Second, "pod bound", func() (bool, error) {
		return getPod(t, ns, "p").Spec.NodeName != "", nil
	})
	if n := getPod(t, ns, "p").Spec.NodeName; n != b.Name {
		t.Errorf("pod bound to %s, want %s (the volume's node)", n, b.Name)
	}
}

// TestWaitForFirstConsumerWithoutCondition: a policy without a volumes
// condition still gets the pod's WaitForFirstConsumer claim provisioned for
// the chosen node, as kube-scheduler's VolumeBinding Reserve/PreBind do: the
// claim is given the node, the pod is bound only once the claim is Bound,
// and to that node.
func TestWaitForFirstConsumerWithoutCondition(t *testing.T) {
	startManager(t, 4)
	pol := uniq("wffc")
	pool(t, pol)
	newNode(uniq(pol+"-node")).label("pool", pol).create(t)
	newNode(uniq(pol+"-node")).label("pool", pol).create(t)
	waitReady(t, pol)
	class := wffcClass(t)
	ns := namespace(t, nil)
	createClaim(t, ns, "data", class, "")
	newPod(ns, "p").policy(pol).claim("data").create(t)
	var selected string
	eventually(t, 10*time.Second, "selected-node annotation", func() (bool, error) {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "data"}, pvc); err != nil {
			return false, err
		}
		selected = pvc.Annotations[permit.AnnSelectedNode]
		return selected != "", nil
	})
	if n := getPod(t, ns, "p").Spec.NodeName; n != "" {
		t.Fatalf("pod bound to %s before its claim was provisioned", n)
	}
	provision(t, ns, "data", selected)
	eventually(t, 15*time.Second, "pod bound to the selected node", func() (bool, error) {
		return getPod(t, ns, "p").Spec.NodeName == selected, nil
	})
	pvc := &corev1.PersistentVolumeClaim{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "data"}, pvc); err != nil {
		t.Fatal(err)
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		t.Errorf("claim phase %s, want Bound", pvc.Status.Phase)
	}
}

// TestWaitForFirstConsumerAfterRestart: a pod with an unbound WFFC claim
// whose reservation was recorded before a restart (it waited for another
// controller's gate) has its claim provisioned for the reserved node before
// the new process binds it, as if it had placed the pod itself: the
// reservation is checked again and VolumeBinding's PreBind runs. With
// leader election the new leader knows the reservation is its own; without
// it the reservation may be another replica's, and is still checked and
// provisioned before the bind.
func TestWaitForFirstConsumerAfterRestart(t *testing.T) {
	for name, leaderElection := range map[string]bool{"leader-election": true, "no-leader-election": false} {
		t.Run(name, func(t *testing.T) {
			testWaitForFirstConsumerAfterRestart(t, leaderElection)
		})
	}
}

func testWaitForFirstConsumerAfterRestart(t *testing.T, leaderElection bool) {
	pol := uniq("wffc-restart")
	pool(t, pol)
	newNode(uniq(pol+"-node")).label("pool", pol).create(t)
	class := wffcClass(t)
	ns := namespace(t, nil)
	createClaim(t, ns, "data", class, "")
	newPod(ns, "p").policy(pol).claim("data").gate("example.com/hold").create(t)
	leader := func(o *controllers.Options) { o.LeaderElection = leaderElection }
	stop := startManager(t, 4, leader)
	waitReady(t, pol)
	var reserved string
	eventually(t, 20*time.Second, "reservation recorded", func() (bool, error) {
		for _, r := range getPolicy(t, pol).Status.Reservations {
			if r.PodNamespace == ns && r.PodName == "p" {
				reserved = r.Node
			}
		}
		return reserved != "", nil
	})
	stop()
	// The other controller lifts its gate while no operator runs.
	p := getPod(t, ns, "p")
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: bindgatev1alpha1.SchedulingGate}}
	if err := env.Client.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	startManager(t, 4, leader)
	eventually(t, 20*time.Second, "selected-node annotation after the restart", func() (bool, error) {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "data"}, pvc); err != nil {
			return false, err
		}
		if n := getPod(t, ns, "p").Spec.NodeName; n != "" {
			return false, fmt.Errorf("pod bound to %s before its claim was provisioned", n)
		}
		return pvc.Annotations[permit.AnnSelectedNode] == reserved, nil
	})
	provision(t, ns, "data", reserved)
	eventually(t, 15*time.Second, "pod bound to the reserved node", func() (bool, error) {
		return getPod(t, ns, "p").Spec.NodeName == reserved, nil
	})
	waitReservationsEmpty(t, pol)
}
