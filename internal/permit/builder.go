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

package permit

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/gang"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// Builder makes the permit plugins of policies and holds what they share:
// the outbound webhook client, the API client volumes and gangs read with,
// and the state of webhook calls in flight. Create one per process.
type Builder struct {
	// Webhooks calls permit webhooks; nil makes webhook conditions wait
	// with that reason.
	Webhooks *webhookclient.Client
	// Client reads claims, storage classes and gang members (the
	// manager's cached client) and writes the selected-node annotation.
	Client client.Client
	// Wake, when set, requeues a pod at once: a webhook call it waited for
	// has ended.
	Wake func(types.NamespacedName)
	// Gangs, when set, tells the gang conditions where gangs were placed.
	Gangs *gang.Coordinator

	mu    sync.Mutex
	cache map[cacheKey][]framework.PermitPlugin
	calls map[callKey]*callEntry
	seen  map[types.UID]*seenClaims // claims a pod's volumes condition saw
}

type cacheKey struct {
	uid        types.UID
	generation int64
}

// defaultBuilder serves PluginsFor: expressions only, webhooks unreachable.
var defaultBuilder = &Builder{}

// PluginsFor returns the permit plugins of the policy built by a Builder
// without webhook client or API client (see Builder.PluginsFor).
func PluginsFor(policy *bindgatev1alpha1.BindingPolicy) []framework.PermitPlugin {
	return defaultBuilder.PluginsFor(policy)
}

// PluginsFor returns the permit plugins of the policy, one per condition,
// in the policy's order. They are built once per policy UID and generation.
func (b *Builder) PluginsFor(policy *bindgatev1alpha1.BindingPolicy) []framework.PermitPlugin {
	if policy == nil || policy.Spec.Permit == nil || len(policy.Spec.Permit.Conditions) == 0 {
		return nil
	}
	key := cacheKey{uid: policy.UID, generation: policy.Generation}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cache == nil {
		b.cache = map[cacheKey][]framework.PermitPlugin{}
	}
	if p, ok := b.cache[key]; ok {
		return p
	}
	var plugins []framework.PermitPlugin
	for i := range policy.Spec.Permit.Conditions {
		c := &policy.Spec.Permit.Conditions[i]
		switch {
		case c.Expression != "":
			plugins = append(plugins, NewExpression(c.Name, c.Expression))
		case c.Gang != nil:
			plugins = append(plugins, gang.NewPermit(c.Name, b.Gangs))
		case c.Volumes != nil:
			plugins = append(plugins, &Volumes{b: b, name: c.Name})
		case c.Webhook != nil:
			plugins = append(plugins, &PermitWebhook{b: b, name: c.Name, policy: policy.Name, wh: *c.Webhook.DeepCopy()})
		}
	}
	// Drop older generations of the same policy.
	for k := range b.cache {
		if k.uid == policy.UID {
			delete(b.cache, k)
		}
	}
	b.cache[key] = plugins
	return plugins
}
