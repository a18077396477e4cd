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
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bindgate/bindgate/internal/gang"
)

// setupPodGroups makes the members of upstream PodGroups (the Workload API,
// scheduling.k8s.io/v1beta1, served when the GenericWorkload feature is on)
// gangs, when the API server serves them; otherwise it says so once and
// gangs come from bindgate's group label only.
func setupPodGroups(ctx context.Context, mgr ctrl.Manager, c *gang.Coordinator) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, gang.PodGroupIndex, func(o client.Object) []string {
		if n := gang.PodGroupName(o.(*corev1.Pod)); n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing pods by PodGroup: %w", err)
	}
	gvk := schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1beta1", Kind: "PodGroup"}
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		ctrl.LoggerFrom(ctx).Info("The Workload API is not served (scheduling.k8s.io/v1beta1 PodGroup, feature GenericWorkload): gangs come from the label scheduling.bindgate.dev/group only", "reason", err.Error())
		return nil
	}
	c.PodGroups = true
	return nil
}
