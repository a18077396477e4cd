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

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ScoringStrategyType names how feasible nodes are ranked.
// +kubebuilder:validation:Enum=LeastAllocated;MostAllocated;BalancedAllocation
type ScoringStrategyType string

const (
	// LeastAllocated prefers the node with the most free capacity (spreads pods).
	LeastAllocated ScoringStrategyType = "LeastAllocated"
	// MostAllocated prefers the node with the least free capacity (packs pods).
	MostAllocated ScoringStrategyType = "MostAllocated"
	// BalancedAllocation prefers the node whose resource usage stays most even.
	BalancedAllocation ScoringStrategyType = "BalancedAllocation"
)

// PolicyMode says whether a policy takes pods or only reports what it would do.
// +kubebuilder:validation:Enum=Enforce;DryRun
type PolicyMode string

const (
	// ModeEnforce: the policy takes the pods it selects.
	ModeEnforce PolicyMode = "Enforce"
	// ModeDryRun: the policy takes no pod and records what it would do.
	ModeDryRun PolicyMode = "DryRun"
)

// PermitTimeoutAction says what happens to a pod whose permit conditions did
// not all approve before permit.timeout.
// +kubebuilder:validation:Enum=Reject;Retry
type PermitTimeoutAction string

const (
	// PermitTimeoutReject marks the pod unschedulable and releases its
	// reservation; the pod is tried again when something changes, or after 5m.
	PermitTimeoutReject PermitTimeoutAction = "Reject"
	// PermitTimeoutRetry releases the reservation and tries again after a
	// backoff of 1s, 2s, 4s ... (at most 5m).
	PermitTimeoutRetry PermitTimeoutAction = "Retry"
)

// FailurePolicy says how a permit webhook that cannot be reached is treated.
// +kubebuilder:validation:Enum=Fail;Ignore
type FailurePolicy string

const (
	// FailurePolicyFail keeps the pod waiting until the permit deadline.
	FailurePolicyFail FailurePolicy = "Fail"
	// FailurePolicyIgnore approves the pod when the webhook cannot answer.
	FailurePolicyIgnore FailurePolicy = "Ignore"
)

// BindingPolicySpec describes which pods a policy takes, where it may place
// them and what must happen before and after they are bound.
// +kubebuilder:validation:XValidation:rule="!has(self.permit) || !has(self.permit.conditions) || !has(self.postBind) || self.permit.conditions.all(c, !self.postBind.exists(p, p.name == c.name))",message="spec.postBind names must differ from spec.permit.conditions names so that events and metrics are unambiguous"
type BindingPolicySpec struct {
	// mode is Enforce (the default: the policy takes the pods it selects) or
	// DryRun: the policy takes no pod (it never reserves, waits or binds;
	// each pod it selects is placed by the policy that takes it without
	// this one, or stays as it is) and records what it would have done
	// with each pod it would take: in status.dryRun, in one event per pod
	// (type Normal, reason DryRun) and in the metric
	// bindgate_dry_run_decisions_total{policy,outcome}. Switching to
	// Enforce takes new pods at once, as a policy created Enforce would;
	// switching to DryRun releases the reservations the policy holds.
	// +optional
	// +kubebuilder:default=Enforce
	Mode PolicyMode `json:"mode,omitempty"`

	// priority orders policies that match the same pod: the highest wins,
	// ties are broken by name. The pod label scheduling.bindgate.dev/policy
	// only chooses among the policies whose selectors select the pod; a pod
	// naming a policy that does not select it stays gated with the condition
	// PolicyMatched=False (reason PolicyDoesNotSelectPod).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=0
	Priority int32 `json:"priority,omitempty"`

	// namespaceSelector selects the namespaces whose pods this policy takes.
	// Empty or absent selects every namespace.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions[].operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.operator in ['In', 'NotIn']) == (has(e.values) && size(e.values) > 0))",message="matchExpressions[].values must be non-empty for In and NotIn and empty for Exists and DoesNotExist"
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// podSelector selects, by label, the pods this policy takes.
	// Empty or absent selects every pod.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions[].operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.operator in ['In', 'NotIn']) == (has(e.values) && size(e.values) > 0))",message="matchExpressions[].values must be non-empty for In and NotIn and empty for Exists and DoesNotExist"
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`

	// nodeSelector restricts the nodes this policy may place pods on.
	// It is ANDed with the pod's own nodeSelector and node affinity.
	// Empty or absent allows every node.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions[].operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.operator in ['In', 'NotIn']) == (has(e.values) && size(e.values) > 0))",message="matchExpressions[].values must be non-empty for In and NotIn and empty for Exists and DoesNotExist"
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// scoring chooses how feasible nodes are ranked.
	// +optional
	// +kubebuilder:default={strategy: LeastAllocated}
	Scoring *Scoring `json:"scoring,omitempty"`

	// capacity is the most this policy may hold at once, counting both the
	// reservations it holds and the pods it has bound that are not yet
	// terminated. Resources not listed are not capped.
	// Each value is a quantity such as 500m or 2Gi, not negative.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Capacity map[corev1.ResourceName]CapacityQuantity `json:"capacity,omitempty"`

	// permit lists the conditions that must all approve before a reserved pod
	// is bound, and how long the pod may wait for them.
	// +optional
	// +kubebuilder:default={}
	Permit *Permit `json:"permit,omitempty"`

	// bind configures the bind phase.
	// +optional
	Bind *Bind `json:"bind,omitempty"`

	// postBind lists the webhooks that are notified after each bind. Delivery
	// is at least once; PostBind never delays or undoes a bind.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	PostBind []PostBindWebhook `json:"postBind,omitempty"`
}

// CapacityQuantity is a quantity such as 500m, 2Gi or 8, not negative.
// +kubebuilder:validation:Type=""
// +kubebuilder:validation:XIntOrString
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:XValidation:rule="type(self) == int || isQuantity(self)",message="must be a quantity such as 500m or 2Gi"
// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : !isQuantity(self) || !quantity(self).isLessThan(quantity('0'))",message="must not be negative"
type CapacityQuantity struct {
	// Quantity is the value. It reads and writes JSON as a Quantity does (a
	// number, or a string such as "500m"); the schema above replaces the
	// quantity regex controller-gen would emit, so that the API server names
	// the resource and says what a quantity looks like.
	resource.Quantity `json:"-"`
}

// Scoring chooses how feasible nodes are ranked.
type Scoring struct {
	// strategy is one of LeastAllocated (spread, the default), MostAllocated
	// (pack) or BalancedAllocation (even use of cpu and memory), with the
	// formulas of kube-scheduler's NodeResourcesFit and
	// NodeResourcesBalancedAllocation plugins.
	// +optional
	// +kubebuilder:default=LeastAllocated
	Strategy ScoringStrategyType `json:"strategy,omitempty"`
}

// Permit holds the conditions a reserved pod waits on before it is bound.
// +kubebuilder:validation:XValidation:rule="!has(self.conditions) || self.conditions.all(c, !has(c.webhook) || duration(c.webhook.timeout) <= duration(self.timeout))",message="spec.permit.conditions[].webhook.timeout must not exceed spec.permit.timeout"
type Permit struct {
	// timeout is how long a reserved pod may wait for its conditions, from
	// 1s to 15m. Default 30s.
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('15m')",message="spec.permit.timeout must be between 1s and 15m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// onTimeout is what happens when the timeout passes: Reject (the
	// default) releases the reservation and marks the pod
	// PodScheduled=False/Unschedulable naming the pending conditions; it is
	// tried again only when its labels, annotations or spec, a node, a
	// claim, a bound pod or this policy's spec changes, or after 5 minutes
	// (as kube-scheduler retries unschedulable pods). Retry releases the
	// reservation and tries again after a backoff of 1s, 2s, 4s ... (at
	// most 5m).
	// +optional
	// +kubebuilder:default=Reject
	OnTimeout PermitTimeoutAction `json:"onTimeout,omitempty"`

	// conditions must all approve before the pod is bound; any one may
	// reject it. Names are unique.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.filter(c, has(c.gang)).size() <= 1",message="spec.permit.conditions may hold at most one gang condition"
	// +kubebuilder:validation:XValidation:rule="self.filter(c, has(c.volumes)).size() <= 1",message="spec.permit.conditions may hold at most one volumes condition"
	Conditions []PermitCondition `json:"conditions,omitempty"`
}

// PermitCondition is one named condition; exactly one of expression, gang,
// volumes and webhook is set.
// +kubebuilder:validation:XValidation:rule="[has(self.expression), has(self.gang), has(self.volumes), has(self.webhook)].filter(x, x).size() == 1",message="exactly one of expression, gang, volumes or webhook must be set"
type PermitCondition struct {
	// name identifies the condition in pod conditions, events and metrics.
	// A DNS label, unique within the policy.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// expression is a CEL expression over `pod`, `node` (the reserved node)
	// and `policy` that returns a bool: true approves, false waits. The
	// variables are typed by the OpenAPI schemas of Pod, Node and
	// BindingPolicy: an unknown field or a type mismatch does not compile
	// (refused at admission by the webhook; otherwise the policy turns
	// Ready=False, InvalidExpression), and so is an expression whose
	// estimated worst-case cost exceeds 1e15 (work that grows with the
	// square of the object, such as comparing every pair of containers).
	// Fields that may be unset need has() or the ?. operator. Evaluation
	// errors, including the runtime cost limit of 1e6, count as waiting,
	// with the error as the reason.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression,omitempty"`

	// gang reserves the pods of a group all-or-nothing.
	// +optional
	Gang *GangCondition `json:"gang,omitempty"`

	// volumes waits for the pod's WaitForFirstConsumer claims to be
	// provisioned on the reserved node.
	// +optional
	Volumes *VolumesCondition `json:"volumes,omitempty"`

	// webhook asks an HTTP service to approve, reject or hold the pod.
	// +optional
	Webhook *PermitWebhook `json:"webhook,omitempty"`
}

// GangCondition reserves the pods that share the label
// scheduling.bindgate.dev/group all-or-nothing.
type GangCondition struct {
	// minMember is how many pods of a group must be reserved together before
	// any of them is bound. A group may override it with the annotation
	// scheduling.bindgate.dev/min-member.
	// +required
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=10000
	MinMember int32 `json:"minMember"`

	// topology places a gang inside one topology domain (a set of nodes
	// sharing a label value, such as a rack or a zone). Without it the
	// members land wherever they fit.
	// +optional
	Topology *GangTopology `json:"topology,omitempty"`
}

// GangTopologyMode says whether a gang may be split across domains.
// +kubebuilder:validation:Enum=Required;Preferred
type GangTopologyMode string

const (
	// GangTopologyRequired never splits a gang across domains of the widest
	// level: it waits until one domain holds every member.
	GangTopologyRequired GangTopologyMode = "Required"
	// GangTopologyPreferred packs a gang into as narrow a domain as can
	// hold it, else places it wherever it fits, and says where it ended.
	GangTopologyPreferred GangTopologyMode = "Preferred"
)

// GangTopology names the node labels that make topology domains.
// +kubebuilder:validation:XValidation:rule="has(self.key) != has(self.levels)",message="exactly one of key or levels must be set"
type GangTopology struct {
	// key is the node label whose values are the domains (for example
	// example.com/rack). Set key or levels, not both.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key,omitempty"`

	// levels are node labels from the widest domain to the narrowest (for
	// example [topology.kubernetes.io/zone, example.com/rack]): the gang
	// goes into one domain of the narrowest level that can hold every
	// member, else of the next wider level. Set key or levels, not both.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=317
	Levels []string `json:"levels,omitempty"`

	// mode is Required (default: never split the gang across domains of
	// the widest level) or Preferred (pack as tightly as possible, else
	// place the gang wherever it fits).
	// +optional
	// +kubebuilder:default=Required
	Mode GangTopologyMode `json:"mode,omitempty"`
}

// LevelKeys returns the topology's node label keys from widest to narrowest.
func (t *GangTopology) LevelKeys() []string {
	if t == nil {
		return nil
	}
	if t.Key != "" {
		return []string{t.Key}
	}
	return t.Levels
}

// VolumesCondition waits for WaitForFirstConsumer claims. It has no fields.
type VolumesCondition struct{}

// Webhook is an HTTPS endpoint that bindgate calls.
// +kubebuilder:validation:XValidation:rule="has(self.url) != has(self.service)",message="exactly one of url or service must be set"
type Webhook struct {
	// url is the https:// address to POST to. Exactly one of url and
	// service is set.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() == 'https'",message="url must be an absolute https:// URL"
	// +kubebuilder:validation:XValidation:rule="!isURL(self) || url(self).getHostname() != ''",message="url must name a host"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*@')",message="url must not carry user info (user:password@); use signingSecretRef"
	URL string `json:"url,omitempty"`

	// service names an in-cluster receiver by its Service, as admission
	// webhooks do: bindgate calls https://<name>.<namespace>.svc:<port><path>
	// and verifies the certificate for <name>.<namespace>.svc. Exactly one of
	// url and service is set.
	// +optional
	Service *ServiceReference `json:"service,omitempty"`

	// timeout bounds each call, from 1s to 30s. Default 10s.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('30s')",message="timeout must be between 1s and 30s"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// caBundle is a PEM bundle used to verify the server's certificate.
	// Absent: the system roots are used.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	CABundle []byte `json:"caBundle,omitempty"`

	// signingSecretRef names the key of a Secret, in the operator's own
	// namespace, whose value signs each request (Standard Webhooks scheme).
	// +optional
	SigningSecretRef *SecretKeyRef `json:"signingSecretRef,omitempty"`
}

// ServiceReference names a Service that receives webhook calls.
type ServiceReference struct {
	// namespace is the Service's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`

	// name is the Service's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// port is the Service's port, 1-65535. Default 443.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=443
	Port *int32 `json:"port,omitempty"`

	// path is the URL path called, starting with /. Default /.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/') && !self.contains('?') && !self.contains('#')",message="path must start with / and hold no query or fragment"
	Path string `json:"path,omitempty"`
}

// SecretKeyRef names one key of a Secret in the operator's namespace.
type SecretKeyRef struct {
	// name is the Secret's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key is the key within the Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// PermitWebhook is a webhook that approves, rejects or holds a pod.
type PermitWebhook struct {
	Webhook `json:",inline"`

	// failurePolicy says what a timeout or connection error means: Fail (the
	// default) keeps the pod waiting until the permit deadline; Ignore
	// approves it.
	// +optional
	// +kubebuilder:default=Fail
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
}

// Bind configures the bind phase.
type Bind struct {
	// webhook, when set, is called after PreBind and before the API bind; a
	// 2xx answer lets the bind proceed, anything else releases the
	// reservation and retries with backoff.
	// +optional
	Webhook *Webhook `json:"webhook,omitempty"`
}

// PostBindWebhook is a named webhook notified after each bind.
type PostBindWebhook struct {
	// name identifies the webhook in annotations, events and metrics.
	// A DNS label, unique within the policy.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	Webhook `json:",inline"`

	// maxAttempts bounds delivery attempts, from 1 to 20. Default 5.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	MaxAttempts int32 `json:"maxAttempts,omitempty"`
}

// Reservation is capacity that a policy holds on a node for one pod.
type Reservation struct {
	// podNamespace is the namespace of the pod.
	// +required
	// +kubebuilder:validation:MaxLength=63
	PodNamespace string `json:"podNamespace"`

	// podName is the name of the pod.
	// +required
	// +kubebuilder:validation:MaxLength=253
	PodName string `json:"podName"`

	// podUID is the UID of the pod; a pod recreated under the same name does
	// not inherit the reservation.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=128
	PodUID types.UID `json:"podUID"`

	// node is the node the capacity is held on.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`

	// resources is what the pod requests, as kube-scheduler computes it.
	// +optional
	// +kubebuilder:validation:MaxProperties=18
	Resources corev1.ResourceList `json:"resources,omitempty"`

	// reservedAt is when the reservation was taken.
	// +required
	ReservedAt metav1.Time `json:"reservedAt"`

	// permitDeadline is when the pod's permit wait ends, if it waits.
	// +optional
	PermitDeadline *metav1.Time `json:"permitDeadline,omitempty"`
}

// BindingPolicyStatus is written only by the operator.
type BindingPolicyStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the policy's state; Ready is always present once
	// the operator has seen the policy.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// reservations are the capacity holds this policy records durably, one
	// per pod, until the pod is bound or released.
	// At most 1000 (MaxReservations): past that, the policy's further pods
	// wait and its condition ReservationsFull is True.
	// +optional
	// +listType=map
	// +listMapKey=podUID
	// +kubebuilder:validation:MaxItems=1000
	Reservations []Reservation `json:"reservations,omitempty"`

	// reservedPods is the number of entries in reservations.
	// +optional
	// +kubebuilder:default=0
	ReservedPods int32 `json:"reservedPods,omitempty"`

	// reserved is the sum of the resources in reservations.
	// +optional
	Reserved corev1.ResourceList `json:"reserved,omitempty"`

	// waitingPods is how many reserved pods are waiting in Permit.
	// +optional
	// +kubebuilder:default=0
	WaitingPods int32 `json:"waitingPods,omitempty"`

	// boundPods is how many pods this policy bound that have not
	// terminated. Updated within seconds of a change.
	// +optional
	// +kubebuilder:default=0
	BoundPods int32 `json:"boundPods,omitempty"`

	// used is what this policy holds, as its capacity counts it: the
	// requests of its bound, non-terminated pods plus its recorded
	// reservations, for cpu, memory and every resource in spec.capacity.
	// Updated within seconds of a change.
	// +optional
	// +kubebuilder:validation:MaxProperties=18
	Used corev1.ResourceList `json:"used,omitempty"`

	// dryRun is what the policy would have done while in DryRun mode. It is
	// cleared when the policy is switched to Enforce.
	// +optional
	DryRun *DryRunStatus `json:"dryRun,omitempty"`

	// gangs counts the gangs with members this policy bound and says where
	// they are. Unset when none is bound. Updated within seconds of a change.
	// +optional
	Gangs *GangsStatus `json:"gangs,omitempty"`
}

// GangsStatus summarises the gangs a policy bound.
type GangsStatus struct {
	// bound is how many gangs (groups) have members bound by this policy
	// that have not terminated.
	// +required
	// +kubebuilder:validation:Minimum=0
	Bound int32 `json:"bound"`

	// domains says where those gangs are, by count: the narrowest domain
	// of the gang topology each gang's nodes share ("2 in
	// topology.kubernetes.io/zone=z1,example.com/rack=a, 1 spread"), or
	// "without topology".
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Domains string `json:"domains,omitempty"`
}

// DryRunOutcome is what a DryRun policy would have done with a pod.
// +kubebuilder:validation:Enum=Bind;Wait;Refuse;Unschedulable
type DryRunOutcome string

const (
	// DryRunBind: it would have reserved the pod on a node and bound it.
	DryRunBind DryRunOutcome = "Bind"
	// DryRunWait: it would have reserved the pod on a node and waited for
	// permit conditions.
	DryRunWait DryRunOutcome = "Wait"
	// DryRunRefuse: a permit condition would have rejected the pod.
	DryRunRefuse DryRunOutcome = "Refuse"
	// DryRunUnschedulable: no node would have taken the pod.
	DryRunUnschedulable DryRunOutcome = "Unschedulable"
)

// MaxDryRunExamples bounds status.dryRun.recent.
const MaxDryRunExamples = 10

// DryRunStatus counts a DryRun policy's would-be decisions and keeps the
// latest ones.
type DryRunStatus struct {
	// bind, wait, refuse and unschedulable count the pods the policy would
	// have taken, by outcome, since it was last switched to DryRun (one
	// decision per pod).
	// +optional
	Bind int32 `json:"bind,omitempty"`
	// +optional
	Wait int32 `json:"wait,omitempty"`
	// +optional
	Refuse int32 `json:"refuse,omitempty"`
	// +optional
	Unschedulable int32 `json:"unschedulable,omitempty"`

	// recent are the latest decisions, newest first, at most 10.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	Recent []DryRunDecision `json:"recent,omitempty"`
}

// DryRunDecision is what a DryRun policy would have done with one pod.
type DryRunDecision struct {
	// podNamespace is the namespace of the pod.
	// +required
	// +kubebuilder:validation:MaxLength=63
	PodNamespace string `json:"podNamespace"`

	// podName is the name of the pod.
	// +required
	// +kubebuilder:validation:MaxLength=253
	PodName string `json:"podName"`

	// outcome is Bind, Wait, Refuse or Unschedulable.
	// +required
	Outcome DryRunOutcome `json:"outcome"`

	// node is the node the pod would have been reserved on (Bind, Wait).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`

	// reason says why (the pending conditions, the refusal, or
	// kube-scheduler's message when no node fits).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`

	// takenBy is the policy that takes the pod instead ("" when none does).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	TakenBy string `json:"takenBy,omitempty"`

	// decidedAt is when the decision was made.
	// +required
	DecidedAt metav1.Time `json:"decidedAt"`
}

// BindingPolicy tells bindgate how to place, hold, permit and bind the gated
// pods it matches.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=bp
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reserved",type=integer,JSONPath=`.status.reservedPods`
// +kubebuilder:printcolumn:name="Waiting",type=integer,JSONPath=`.status.waitingPods`
// +kubebuilder:printcolumn:name="Bound",type=integer,JSONPath=`.status.boundPods`
// +kubebuilder:printcolumn:name="Used",type=string,JSONPath=`.status.used`,priority=1
// +kubebuilder:printcolumn:name="Capacity",type=string,JSONPath=`.spec.capacity`,priority=1
// +kubebuilder:printcolumn:name="Gangs",type=integer,JSONPath=`.status.gangs.bound`,priority=1
// +kubebuilder:printcolumn:name="Gang domains",type=string,JSONPath=`.status.gangs.domains`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BindingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired behaviour of the policy.
	// +optional
	Spec BindingPolicySpec `json:"spec,omitempty"`

	// status is the observed state, written by the operator.
	// +optional
	Status BindingPolicyStatus `json:"status,omitempty"`
}

// BindingPolicyList contains a list of BindingPolicy.
// +kubebuilder:object:root=true
type BindingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BindingPolicy `json:"items"`
}
