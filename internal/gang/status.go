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

package gang

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// maxDomainsText bounds the status' summary of gang domains.
const maxDomainsText = 256

// Levels returns the node label keys of the policy's gang topology, widest
// first (none without a gang condition or topology).
func Levels(policy *bindgatev1alpha1.BindingPolicy) []string {
	if policy.Spec.Permit == nil {
		return nil
	}
	for _, c := range policy.Spec.Permit.Conditions {
		if c.Gang != nil {
			return c.Gang.Topology.LevelKeys()
		}
	}
	return nil
}

// Summarize is the gangs part of a policy's status from the pods it bound:
// how many gangs (groups, by label or PodGroup) have bound members, and
// where they are ("2 in example.com/rack=a, 1 spread"), the narrowest
// domain of levels each gang's nodes share. nodeOf returns a node by name
// (nil when unknown). It returns nil when no bound pod is a gang member.
func Summarize(pods []*corev1.Pod, levels []string, nodeOf func(string) *corev1.Node) *bindgatev1alpha1.GangsStatus {
	nodes := map[string][]*corev1.Node{}
	for _, p := range pods {
		g := groupOf(p)
		if g == "" || p.Spec.NodeName == "" {
			continue
		}
		g = p.Namespace + "/" + g
		if n := nodeOf(p.Spec.NodeName); n != nil {
			nodes[g] = append(nodes[g], n)
		} else if _, ok := nodes[g]; !ok {
			nodes[g] = nil
		}
	}
	if len(nodes) == 0 {
		return nil
	}
	count := map[string]int{}
	for _, ns := range nodes {
		where := "spread"
		if len(levels) == 0 {
			where = "without topology"
		} else if d, ok := Shared(ns, levels); ok {
			where = "in " + d.String()
		}
		count[where]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if count[keys[i]] != count[keys[j]] {
			return count[keys[i]] > count[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", count[k], k))
	}
	text := strings.Join(parts, ", ")
	if len(text) > maxDomainsText {
		text = text[:maxDomainsText-3] + "..."
	}
	return &bindgatev1alpha1.GangsStatus{Bound: int32(len(nodes)), Domains: text}
}
