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

package placement

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// Evaluation is what the framework says about every node for one pod: the
// first plugin that refused each refused node, and each feasible node's
// score per plugin. Nothing is reserved.
type Evaluation struct {
	// NumNodes is the number of nodes in the snapshot.
	NumNodes int
	// Refused maps each node that does not take the pod to the status of
	// the first plugin that refused it (Status.Plugin names the plugin; a
	// refusal at PreFilter applies to every node it excluded).
	Refused map[string]*fwk.Status
	// Scores are the feasible nodes' scores, weighted and normalised as
	// kube-scheduler sums them, best first (ties: node name).
	Scores []fwk.NodePluginScores
}

// Evaluate runs PreFilter and Filter for pod under policy on every node
// (no sampling), then PreScore and Score on every feasible node, and
// reports each node's verdict: the same plugins SelectNode runs, for
// explaining a placement. The caller holds Lock.
func (p *Placer) Evaluate(ctx context.Context, pod *corev1.Pod, policy *bindgatev1alpha1.BindingPolicy) (*Evaluation, error) {
	if err := p.refresh(ctx); err != nil {
		return nil, err
	}
	fw := p.framework(policy)
	state := newState(policy)
	nodes, err := p.snapshot.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	ev := &Evaluation{NumNodes: len(nodes), Refused: map[string]*fwk.Status{}}
	if len(nodes) == 0 {
		return ev, nil
	}
	preRes, st, unschedulablePlugins := fw.RunPreFilterPlugins(ctx, state, pod)
	if !st.IsSuccess() {
		if !st.IsRejected() {
			return nil, st.AsError()
		}
		if st.Plugin() == "" && unschedulablePlugins.Len() > 0 {
			st.SetPlugin(sets.List(unschedulablePlugins)[0])
		}
		for _, ni := range nodes {
			ev.Refused[ni.Node().Name] = st
		}
		return ev, nil
	}
	var feasible []fwk.NodeInfo
	for _, ni := range nodes {
		name := ni.Node().Name
		if !preRes.AllNodes() && !preRes.NodeNames.Has(name) {
			absent := fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(unschedulablePlugins)))
			if unschedulablePlugins.Len() > 0 {
				absent.SetPlugin(sets.List(unschedulablePlugins)[0])
			}
			ev.Refused[name] = absent
			continue
		}
		if st := fw.RunFilterPlugins(ctx, state, pod, ni); !st.IsSuccess() {
			if st.Code() == fwk.Error {
				return nil, st.AsError()
			}
			ev.Refused[name] = st
			continue
		}
		feasible = append(feasible, ni)
	}
	if len(feasible) == 0 {
		return ev, nil
	}
	if st := fw.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() && !st.IsSkip() {
		return nil, st.AsError()
	}
	scores, st := fw.RunScorePlugins(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return nil, st.AsError()
	}
	sort.Slice(scores, func(i, j int) bool {
		if scores[i].TotalScore != scores[j].TotalScore {
			return scores[i].TotalScore > scores[j].TotalScore
		}
		return scores[i].Name < scores[j].Name
	})
	ev.Scores = scores
	return ev, nil
}
