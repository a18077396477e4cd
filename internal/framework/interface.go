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

// Package framework defines bindgate's phases the way kube-scheduler's
// framework does: one small interface per extension point and a *Status
// where nil means success. It reuses kube-scheduler's Status and Code so
// that the codes (Unschedulable, Wait, Skip, Error) mean what scheduler
// authors expect.
package framework

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// Status is kube-scheduler's status: nil means success.
type Status = fwk.Status

// Code is a Status code.
type Code = fwk.Code

// The codes bindgate's phases return.
const (
	Success       = fwk.Success
	Error         = fwk.Error
	Unschedulable = fwk.Unschedulable
	// UnschedulableAndUnresolvable means retrying on this node cannot help.
	UnschedulableAndUnresolvable = fwk.UnschedulableAndUnresolvable
	Wait                         = fwk.Wait
	Skip                         = fwk.Skip
	// Pending means the cycle stopped at a change that is nobody's failure
	// (a lost race): it is tried again without backoff.
	Pending = fwk.Pending
)

// MaxNodeScore is the highest score a Score plugin returns.
const MaxNodeScore = fwk.MaxScore

// NewStatus makes a status with a code and reasons.
func NewStatus(code Code, reasons ...string) *Status { return fwk.NewStatus(code, reasons...) }

// AsStatus wraps an error in a status with code Error.
func AsStatus(err error) *Status { return fwk.AsStatus(err) }

// CycleState carries what one pod's cycle has learnt so far.
type CycleState struct {
	// Policy is the BindingPolicy that took the pod.
	Policy *bindgatev1alpha1.BindingPolicy
	// PodRequests are the pod's requests as kube-scheduler computes them.
	PodRequests *Resource
}

// NewCycleState prepares the state of pod's cycle under policy.
func NewCycleState(policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod) *CycleState {
	return &CycleState{Policy: policy, PodRequests: PodRequests(pod)}
}

// Plugin is the parent of every phase interface.
type Plugin interface {
	Name() string
}

// ReservePlugin holds capacity for a pod on a node. Unreserve must be
// idempotent: it may run for a pod that Reserve never saw.
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeName string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeName string)
}

// PermitPlugin approves (nil), rejects (Unschedulable) or holds (Wait) a
// reserved pod. A waiting pod is asked again on every event that may change
// the answer and at the latest after the returned duration.
type PermitPlugin interface {
	Plugin
	Permit(ctx context.Context, state *CycleState, pod *corev1.Pod, node *corev1.Node) (*Status, time.Duration)
}

// PreBindPlugin re-checks or prepares a node right before the bind.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeName string) *Status
}

// BindPlugin binds a pod to a node. Skip hands the pod to the next binder.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeName string) *Status
}

// PostBindPlugin learns of a bind. It can neither fail nor undo it.
type PostBindPlugin interface {
	Plugin
	PostBind(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeName string)
}
