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

package controllers

import (
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// decodedPod builds a pod whose strings all have backing arrays of their
// own, as a decoded pod's do.
func decodedPod(name, seal string) *corev1.Pod {
	c := strings.Clone
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: c(name), Namespace: c("team-a"),
			Labels:          map[string]string{c("app"): c("web")},
			Annotations:     map[string]string{c("bindgate.io/policy"): c("gpu"), c("bindgate.io/seal"): c(seal)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: c("apps/v1"), Kind: c("ReplicaSet"), Name: c("web-1")}},
		},
		Spec: corev1.PodSpec{
			NodeName: c("node-1"), SchedulerName: c("bindgate"),
			NodeSelector: map[string]string{c("kubernetes.io/hostname"): c("node-1")},
			Tolerations:  []corev1.Toleration{{Key: c("node.kubernetes.io/not-ready"), Operator: corev1.TolerationOperator(c("Exists")), Effect: corev1.TaintEffect(c("NoExecute"))}},
			Containers:   []corev1.Container{{Name: c("app"), Image: c("registry.k8s.io/pause:3.10")}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPhase(c("Running")), Conditions: []corev1.PodCondition{{Type: corev1.PodConditionType(c("PodScheduled")), Status: corev1.ConditionStatus(c("True"))}}},
	}
}

// TestInternPodSharesRepeatedStrings: two pods decoded apart share their
// repeated strings after internPod, and are otherwise unchanged.
func TestInternPodSharesRepeatedStrings(t *testing.T) {
	a, b := decodedPod("web-1-a", "seal-a"), decodedPod("web-1-b", "seal-b")
	wantA, wantB := a.DeepCopy(), b.DeepCopy()
	internPod(a)
	// The table holds its copies strongly: a collection between two pods
	// (decoded minutes apart in a long-lived cache) does not end the
	// sharing, as it did with package unique's weak copies.
	runtime.GC()
	runtime.GC()
	internPod(b)
	if diff := cmp.Diff(wantA, a); diff != "" {
		t.Errorf("internPod changed the pod (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantB, b); diff != "" {
		t.Errorf("internPod changed the pod (-want +got):\n%s", diff)
	}
	shared := map[string]func(*corev1.Pod) string{
		"namespace":      func(p *corev1.Pod) string { return p.Namespace },
		"label value":    func(p *corev1.Pod) string { return p.Labels["app"] },
		"annotation key": func(p *corev1.Pod) string { return keyOf(p.Annotations, "bindgate.io/policy") },
		"owner name":     func(p *corev1.Pod) string { return p.OwnerReferences[0].Name },
		"node":           func(p *corev1.Pod) string { return p.Spec.NodeName },
		"pin key":        func(p *corev1.Pod) string { return keyOf(p.Spec.NodeSelector, "kubernetes.io/hostname") },
		"pin value":      func(p *corev1.Pod) string { return p.Spec.NodeSelector["kubernetes.io/hostname"] },
		"toleration key": func(p *corev1.Pod) string { return p.Spec.Tolerations[0].Key },
		"image":          func(p *corev1.Pod) string { return p.Spec.Containers[0].Image },
		"phase":          func(p *corev1.Pod) string { return string(p.Status.Phase) },
		"condition type": func(p *corev1.Pod) string { return string(p.Status.Conditions[0].Type) },
	}
	for name, get := range shared {
		if unsafe.StringData(get(a)) != unsafe.StringData(get(b)) {
			t.Errorf("%s: the two pods hold separate copies of %q", name, get(a))
		}
	}
}

// keyOf returns the map's own copy of key.
func keyOf(m map[string]string, key string) string {
	for k := range m {
		if k == key {
			return k
		}
	}
	return ""
}

// mapID is the identity of a map: two maps with the same ID are one map.
func mapID(m map[string]string) uintptr { return reflect.ValueOf(m).Pointer() }

// TestInternPodSharesMaps: pods with the same labels, or pinned to the same
// node, hold one map between them; a pod with other labels or another pin
// keeps its own content.
func TestInternPodSharesMaps(t *testing.T) {
	a, b, other := decodedPod("web-1-a", "seal-a"), decodedPod("web-1-b", "seal-b"), decodedPod("db-0", "seal-c")
	other.Labels = map[string]string{"app": "db", "tier": "data"}
	other.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "node-2"}
	wantOther := other.DeepCopy()
	for _, p := range []*corev1.Pod{a, b, other} {
		internPod(p)
	}
	if mapID(a.Labels) != mapID(b.Labels) {
		t.Error("two pods with the same labels hold separate maps")
	}
	if mapID(a.Spec.NodeSelector) != mapID(b.Spec.NodeSelector) {
		t.Error("two pods pinned to the same node hold separate nodeSelector maps")
	}
	if mapID(a.Annotations) == mapID(b.Annotations) {
		t.Error("annotations (each pod's own seal) are shared")
	}
	if mapID(a.Labels) == mapID(other.Labels) || mapID(a.Spec.NodeSelector) == mapID(other.Spec.NodeSelector) {
		t.Error("pods with different maps share one")
	}
	if diff := cmp.Diff(wantOther, other); diff != "" {
		t.Errorf("internPod changed the pod (-want +got):\n%s", diff)
	}
}

// TestMapTableBounded: the table starts afresh once full; what it handed out
// before stays as it was.
func TestMapTableBounded(t *testing.T) {
	tbl := &mapTable{}
	first := tbl.share(map[string]string{"app": "0"})
	for i := range maxSharedMaps + 10 {
		tbl.share(map[string]string{"app": strconv.Itoa(i)})
	}
	if n := len(tbl.maps); n > maxSharedMaps {
		t.Errorf("table holds %d maps, want at most %d", n, maxSharedMaps)
	}
	if diff := cmp.Diff(map[string]string{"app": "0"}, first); diff != "" {
		t.Errorf("a map handed out changed (-want +got):\n%s", diff)
	}
	// Keys that would run together without separators stay apart.
	x := tbl.share(map[string]string{"a": "b", "c": ""})
	y := tbl.share(map[string]string{"a": "bc"})
	if mapID(x) == mapID(y) || len(x) != 2 || len(y) != 1 {
		t.Errorf("different maps shared: %v and %v", x, y)
	}
}

// TestStringTableBounded: the string table starts afresh once full; the
// copies it handed out before stay as they were, and it keeps a copy of its
// own rather than the caller's string.
func TestStringTableBounded(t *testing.T) {
	tbl := &stringTable{}
	decoded := strings.Clone("team-a/a-longer-decoded-buffer")[:6]
	first := tbl.intern(decoded)
	if unsafe.StringData(first) == unsafe.StringData(decoded) {
		t.Error("the table kept the caller's string (and its buffer) instead of a copy of its own")
	}
	if again := tbl.intern(strings.Clone("team-a")); unsafe.StringData(again) != unsafe.StringData(first) {
		t.Error("the same string interned twice gave two copies")
	}
	for i := range maxSharedStrings + 10 {
		tbl.intern(strconv.Itoa(i))
	}
	if n := len(tbl.strings); n > maxSharedStrings {
		t.Errorf("table holds %d strings, want at most %d", n, maxSharedStrings)
	}
	if first != "team-a" {
		t.Errorf("a string handed out changed: %q", first)
	}
}
