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

package eventhandlers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
)

// RegisterDRA requeues pods on the DRA events that can make them
// schedulable: a ResourceSlice or DeviceClass added, changed or removed
// (devices appear or are freed: every unschedulable pod), a ResourceClaim
// added or changed (the pods that use it) or deallocated or deleted (its
// devices are free again: every unschedulable pod). factory is the
// placer's, whose DRA informers the DynamicResources plugin reads.
func (h *Handlers) RegisterDRA(ctx context.Context, factory informers.SharedInformerFactory) error {
	all := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.Queue.MoveAllToActive() },
		UpdateFunc: func(any, any) { h.Queue.MoveAllToActive() },
		DeleteFunc: func(any) { h.Queue.MoveAllToActive() },
	}
	for _, inf := range []toolscache.SharedIndexInformer{
		factory.Resource().V1().ResourceSlices().Informer(),
		factory.Resource().V1().DeviceClasses().Informer(),
	} {
		if _, err := inf.AddEventHandler(all); err != nil {
			return fmt.Errorf("watching DRA objects: %w", err)
		}
	}
	_, err := factory.Resource().V1().ResourceClaims().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { h.onResourceClaim(ctx, nil, o) },
		UpdateFunc: func(old, o any) { h.onResourceClaim(ctx, old, o) },
		DeleteFunc: func(o any) {
			if c, ok := unwrap(o).(*resourcev1.ResourceClaim); ok && c.Status.Allocation != nil {
				h.Queue.MoveAllToActive()
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watching ResourceClaims: %w", err)
	}
	return nil
}

// onResourceClaim requeues the pods that use the claim (it may be created
// or allocated now), or every unschedulable pod when its devices were
// freed.
func (h *Handlers) onResourceClaim(ctx context.Context, oldObj, obj any) {
	claim, ok := obj.(*resourcev1.ResourceClaim)
	if !ok {
		return
	}
	if old, ok := oldObj.(*resourcev1.ResourceClaim); ok && old.Status.Allocation != nil && claim.Status.Allocation == nil {
		h.Queue.MoveAllToActive()
		return
	}
	h.requeueUsers(ctx, claim.Namespace, func(pod *corev1.Pod) bool { return usesClaim(pod, claim.Name) })
}

// usesClaim says whether pod uses the ResourceClaim name: by name, or as the
// claim generated for it from a template.
func usesClaim(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.ResourceClaims {
		if c.ResourceClaimName != nil && *c.ResourceClaimName == name {
			return true
		}
	}
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil && *s.ResourceClaimName == name {
			return true
		}
	}
	return false
}
