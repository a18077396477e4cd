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

package v1alpha1

// Names that users, docs and tests depend on. Keep them stable.
const (
	// Prefix is the prefix of every bindgate label, annotation and condition.
	Prefix = "scheduling.bindgate.dev/"

	// SchedulingGate is the gate that hands a pod to bindgate.
	SchedulingGate = Prefix + "gate"

	// SchedulerName is the alternative trigger: pods with
	// spec.schedulerName: bindgate are handled as well.
	SchedulerName = "bindgate"

	// PolicyLabel pins a pod to the named BindingPolicy.
	PolicyLabel = Prefix + "policy"

	// GroupLabel names the gang a pod belongs to.
	GroupLabel = Prefix + "group"

	// MinMemberAnnotation overrides the gang condition's minMember for a group.
	MinMemberAnnotation = Prefix + "min-member"

	// EnabledNamespaceLabel, set to "true" on a namespace, makes the mutating
	// webhook add SchedulingGate to its new pods.
	EnabledNamespaceLabel = Prefix + "enabled"

	// PolicyAnnotation, set on the binding, records the policy that bound the pod.
	PolicyAnnotation = Prefix + "policy"

	// SealAnnotation, written by bindgate with PolicyAnnotation, proves that
	// bindgate itself recorded the policy: an HMAC of the pod's UID and the
	// policy under a key only the operator holds. Pods whose policy record
	// lacks a valid seal are charged to no policy and get no PostBind notice.
	SealAnnotation = Prefix + "seal"

	// PostBindPendingAnnotation, set on the binding, records that PostBind
	// notices are still to be delivered.
	PostBindPendingAnnotation = Prefix + "postbind-pending"

	// PostBindResultAnnotationPrefix + webhook name records a hook's outcome.
	PostBindResultAnnotationPrefix = "postbind." + Prefix
)

// Condition types and reasons of a BindingPolicy.
const (
	// ConditionReady is True when the policy is valid and in use.
	ConditionReady = "Ready"

	// ConditionReservationsFull is True while the policy's status records
	// MaxReservations reservations and refuses more (its pods wait).
	ConditionReservationsFull = "ReservationsFull"
	// ReasonMaxReservations: status.reservations is at MaxReservations.
	ReasonMaxReservations = "MaxReservations"
	// ReasonHasRoom: status.reservations has room again.
	ReasonHasRoom = "HasRoom"

	// MaxReservations bounds status.reservations (its maxItems): 1000
	// reservations of the longest names the schema allows, with four
	// resources each, take 858 KiB (878 bytes each; TestMaxReservationsFit
	// in api/v1alpha1 measures it), 56% of etcd's default 1.5 MiB object
	// limit, leaving the rest to the spec.
	MaxReservations = 1000

	// ReasonValid means the policy compiled and is in use.
	ReasonValid = "Valid"
	// ReasonInvalidExpression means a permit expression failed to compile.
	ReasonInvalidExpression = "InvalidExpression"
	// ReasonInvalidWebhook means a webhook address or CA bundle is unusable.
	ReasonInvalidWebhook = "InvalidWebhook"
	// ReasonInvalidSelector means a label selector failed to parse.
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonMissingSecret means a webhook's signingSecretRef names a Secret
	// or key that does not exist in the operator's namespace.
	ReasonMissingSecret = "MissingSecret"
)

// Pod condition types and reasons.
const (
	// PodConditionPermitted is False while a pod waits in Permit.
	PodConditionPermitted = Prefix + "Permitted"
	// PodConditionPolicyMatched is False while no policy takes the pod.
	PodConditionPolicyMatched = Prefix + "PolicyMatched"

	// ReasonNoPolicy means no BindingPolicy matches the pod.
	ReasonNoPolicy = "NoPolicy"
	// ReasonPolicyDoesNotSelect means the label scheduling.bindgate.dev/policy
	// names a policy whose selectors do not select the pod: the label only
	// chooses among the policies that select it.
	ReasonPolicyDoesNotSelect = "PolicyDoesNotSelectPod"
	// ReasonPolicyNotReady means the matched policy is not Ready.
	ReasonPolicyNotReady = "PolicyNotReady"
	// ReasonWaiting means the pod waits for permit conditions.
	ReasonWaiting = "Waiting"
	// ReasonPermitted means every permit condition approved.
	ReasonPermitted = "Permitted"
	// ReasonRejected means a permit condition rejected the pod.
	ReasonRejected = "Rejected"
	// ReasonStranded (PodScheduled=False, and the event) means bindgate
	// lifted the pod's gate and pinned it to a node, but the bind failed
	// and the pod can never bind there (the node is gone or it no longer
	// fits); the pin cannot be lifted. Pods with a controller owner are
	// deleted instead, so that the owner creates new ones.
	ReasonStranded = "Stranded"
	// ReasonTimeout means the permit timeout passed.
	ReasonTimeout = "Timeout"
)
