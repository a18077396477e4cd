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
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"
)

// maxSelectorMemo bounds the selectors remembered: there is one per policy
// with a nodeSelector; past the bound the memo starts again.
const maxSelectorMemo = 256

// selectorMemo remembers, per label selector, whether it selects every node
// of the snapshot, for as long as the snapshot's node-labels epoch (see
// cache.UpdateSnapshot) stays the same: no node added, deleted or
// relabelled.
type selectorMemo struct {
	mu    sync.Mutex
	epoch uint64
	all   map[string]bool // by the selector's String()
}

func newSelectorMemo() *selectorMemo { return &selectorMemo{all: map[string]bool{}} }

// setEpoch is called with the epoch of each snapshot update; a new epoch
// forgets every answer.
func (m *selectorMemo) setEpoch(epoch uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if epoch != m.epoch {
		m.epoch = epoch
		clear(m.all)
	}
}

// selectsAll says whether sel selects every one of nodes, the snapshot's
// nodes under the current epoch.
func (m *selectorMemo) selectsAll(sel labels.Selector, nodes []fwk.NodeInfo) bool {
	key := sel.String()
	m.mu.Lock()
	epoch := m.epoch
	all, ok := m.all[key]
	m.mu.Unlock()
	if ok {
		return all
	}
	all = true
	for _, ni := range nodes {
		if !sel.Matches(labels.Set(ni.Node().Labels)) {
			all = false
			break
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.epoch != epoch {
		return all // the nodes changed meanwhile: not remembered
	}
	if len(m.all) >= maxSelectorMemo {
		clear(m.all)
	}
	m.all[key] = all
	return all
}
