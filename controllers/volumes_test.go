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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
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

func setClaimBound(t *testing.T, ns, name string) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
		t.Fatal(err)
	}
	pvc.Status.Phase = corev1.ClaimBound
	if err := env.Client.Status().Update(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
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
	eventually(t, 10*time.Second, "missing claim reported", func() (bool, error) {
		return permittedMessage(t, ns, "missing") == "False/Waiting: volumes: nope not found", nil
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

	setClaimBound(t, ns, "data")
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

// TestVolumeFilterNodeAffinity: a claim bound to a local volume takes the
// pod to the volume's node.
func TestVolumeFilterNodeAffinity(t *testing.T) {
	startManager(t, 4)
	pol := uniq("volaff")
	pool(t, pol, withVolumes)
	// Both nodes are empty: without the volume, the tie goes to "-a".
	newNode(pol+"-a").label("pool", pol).create(t)
	b := newNode(pol+"-b").label("pool", pol).create(t)
	waitReady(t, pol)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: uniq("pv")},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/x"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{b.Name},
				}},
			}}}},
		},
	}
	if err := env.Client.Create(context.Background(), pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pv) })
	ns := namespace(t, nil)
	createClaim(t, ns, "local", "", pv.Name)
	setClaimBound(t, ns, "local")
	newPod(ns, "p").policy(pol).claim("local").create(t)
	eventually(t, 10*time.Second, "pod bound", func() (bool, error) {
		return getPod(t, ns, "p").Spec.NodeName != "", nil
	})
	if n := getPod(t, ns, "p").Spec.NodeName; n != b.Name {
		t.Errorf("pod bound to %s, want %s (the volume's node)", n, b.Name)
	}
}
