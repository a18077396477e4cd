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
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// internPod makes the strings that pods repeat (namespace, labels,
// annotation keys, the node, the pin, images, tolerations, phase...) share
// one copy across every pod the informer holds: decoding gives each pod its
// own. Label sets and nodeSelectors are shared whole: pods with the same
// labels (a ReplicaSet's) or pinned to the same node hold one map between
// them (informer objects are read-only). The pod is otherwise unchanged. A
// pinned pod carries a kubernetes.io/hostname nodeSelector and the policy
// annotations, which made gated bindgate's live heap 6-7 MB larger than with
// schedulerName pods at 10000 pods. Strings are interned in a bounded table
// that holds its canonical copies strongly (sharedStrings), so pods decoded
// minutes apart share them too. (Package unique was used first: it holds
// its copies weakly, and as the pod keeps only the string, not unique's
// handle, every garbage collection dropped the canonical copies and the
// next pods got new ones: under load, about one copy per collection.)
func internPod(pod *corev1.Pod) {
	m := &pod.ObjectMeta
	in(&m.Namespace)
	in(&m.GenerateName)
	m.Labels = sharedMaps.share(m.Labels)
	m.Annotations = internMap(m.Annotations, false)
	for i := range m.OwnerReferences {
		o := &m.OwnerReferences[i]
		in(&o.APIVersion)
		in(&o.Kind)
		in(&o.Name)
	}
	s := &pod.Spec
	in(&s.NodeName)
	in(&s.SchedulerName)
	in(&s.ServiceAccountName)
	in(&s.DeprecatedServiceAccount)
	in(&s.PriorityClassName)
	in(&s.RestartPolicy)
	in(&s.DNSPolicy)
	s.NodeSelector = sharedMaps.share(s.NodeSelector)
	for i := range s.Tolerations {
		t := &s.Tolerations[i]
		in(&t.Key)
		in(&t.Operator)
		in(&t.Value)
		in(&t.Effect)
	}
	for i := range s.SchedulingGates {
		in(&s.SchedulingGates[i].Name)
	}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			c := &cs[i]
			in(&c.Name)
			in(&c.Image)
			in(&c.ImagePullPolicy)
			in(&c.TerminationMessagePath)
			in(&c.TerminationMessagePolicy)
			for j := range c.VolumeMounts {
				in(&c.VolumeMounts[j].Name)
				in(&c.VolumeMounts[j].MountPath)
			}
		}
	}
	st := &pod.Status
	in(&st.Phase)
	in(&st.QOSClass)
	in(&st.HostIP)
	for i := range st.Conditions {
		in(&st.Conditions[i].Type)
		in(&st.Conditions[i].Status)
		in(&st.Conditions[i].Reason)
	}
}

// in replaces *s by its canonical copy.
func in[T ~string](s *T) {
	if *s != "" {
		*s = T(sharedStrings.intern(string(*s)))
	}
}

// maxSharedStrings bounds the strings stringTable keeps.
const maxSharedStrings = 65536

// stringTable hands out one copy of each string pods repeat. Once it holds
// maxSharedStrings strings it starts afresh, as mapTable does: the copies
// already handed out stay with their pods, and the table never holds more
// than that however many distinct strings come and go (names that are
// unique per pod, such as a pod's own name, are never interned).
type stringTable struct {
	mu      sync.Mutex
	strings map[string]string
}

var sharedStrings = &stringTable{}

// intern returns the table's copy of s, adding one (a copy of its own, so
// that the table never keeps a larger decoded buffer alive) when it has
// none.
func (t *stringTable) intern(s string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.strings[s]; ok {
		return c
	}
	if t.strings == nil || len(t.strings) >= maxSharedStrings {
		t.strings = make(map[string]string, 1024)
	}
	c := strings.Clone(s)
	t.strings[c] = c
	return c
}

// internMap interns a map's keys and, when values is set, its values (label
// and selector values repeat; annotation values are often unique, such as a
// seal, and interning them would only fill the table).
func internMap(m map[string]string, values bool) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		in(&k)
		if values {
			in(&v)
		}
		out[k] = v
	}
	return out
}

// maxSharedMaps bounds the maps mapTable keeps for sharing.
const maxSharedMaps = 16384

// mapTable hands out one copy of each string map pods carry, keyed by its
// content. Once it holds maxSharedMaps maps it starts afresh: the maps
// already handed out stay with their pods, and the table never holds more
// than that however many distinct sets come and go.
type mapTable struct {
	mu   sync.Mutex
	maps map[string]map[string]string
}

var sharedMaps = &mapTable{}

// share returns the table's copy of m (keys and values interned), adding
// one when it has none.
func (t *mapTable) share(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	key := mapKey(m)
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.maps[key]; ok && maps.Equal(s, m) {
		return s
	}
	if t.maps == nil || len(t.maps) >= maxSharedMaps {
		t.maps = make(map[string]map[string]string, 64)
	}
	s := internMap(m, true)
	t.maps[key] = s
	return s
}

// mapKey is m's content as one string: its sorted keys, each followed by its
// value, every one NUL-terminated. (Label keys and values cannot hold a NUL;
// share compares the maps all the same.)
func mapKey(m map[string]string) string {
	keys := make([]string, 0, 8) // on the stack for the usual few labels
	n := 0
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	return b.String()
}
