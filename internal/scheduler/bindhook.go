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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bindhook"
	"github.com/bindgate/bindgate/internal/framework"
)

// BindHook calls a policy's spec.bind.webhook; nil means the bind may
// proceed. *bindhook.Caller implements it.
type BindHook interface {
	Call(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod, node string) *bindhook.Rejection
}

// callBindHook runs the BindHook before the gate patch. A refusal
// ends the cycle: the reservation is released, the pod gets an event that
// names the webhook, and the cycle ends with Wait, to be retried after the
// webhook's backoff.
func (s *Scheduler) callBindHook(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node) (*framework.Status, time.Duration) {
	if s.BindHook == nil {
		return nil, 0
	}
	rej := s.BindHook.Call(ctx, state.Policy, pod, node.Name)
	if rej == nil {
		return nil, 0
	}
	ctrl.LoggerFrom(ctx).V(2).Info("BindHook refused the bind", "pod", klog.KObj(pod), "node", node.Name,
		"reason", rej.Message, "retryAfter", rej.RetryAfter)
	s.unreserve(ctx, state, pod, node.Name)
	s.Recorder.Eventf(pod, node, corev1.EventTypeWarning, rej.Reason, "Binding", "%s (retrying in %s)", rej.Message, rej.RetryAfter)
	return framework.NewStatus(framework.Wait, rej.Message), rej.RetryAfter
}
