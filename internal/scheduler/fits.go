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

package scheduler

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
)

// FitsOn runs kube-scheduler's PreFilter and Filter plugins (with the
// policy's own) for pod on node alone, on the cluster as it is now: whether
// the node a pod is pinned to still takes it. nil: it does; a rejection
// says why not. A pod that holds a reservation fits where it holds it.
func (s *Scheduler) FitsOn(ctx context.Context, pod *corev1.Pod, policy *bindgatev1alpha1.BindingPolicy, node string) *framework.Status {
	if _, held := s.Cache.Reserved(pod.UID); held {
		return nil
	}
	s.Placer.Lock()
	defer s.Placer.Unlock()
	_, st := s.Placer.Check(ctx, pod, policy, node)
	return st
}
