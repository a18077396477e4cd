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

package explain

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Report explains one pod. Its JSON form is what `-o json` prints.
type Report struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// State is the pod's situation in one line.
	State string `json:"state"`
	// Node is the node the pod is bound to, if it is.
	Node string `json:"node,omitempty"`
	// Policy is the policy that takes the pod ("" when none does).
	Policy string `json:"policy,omitempty"`
	// Policies are every policy's verdict on the pod: the one that takes
	// it first, then the others, with why not.
	Policies []PolicyVerdict `json:"policies,omitempty"`
	// Nodes are the placement plugins' verdicts under Policy.
	Nodes *Nodes `json:"nodes,omitempty"`
	// Reservation is the capacity the pod holds, if any.
	Reservation *Reservation `json:"reservation,omitempty"`
	// Permit is each permit condition's verdict, led by the wait of the
	// pod's upstream PodGroup (kind "podgroup") while its gang is short.
	Permit []ConditionVerdict `json:"permit,omitempty"`
	// Timeline lists the pod's recent events and condition changes, oldest first.
	Timeline []TimelineEntry `json:"timeline,omitempty"`
	// Notes are caveats about how the report was computed.
	Notes []string `json:"notes,omitempty"`
}

// PolicyVerdict is one policy's verdict on the pod.
type PolicyVerdict struct {
	Name     string `json:"name"`
	Priority int32  `json:"priority"`
	Takes    bool   `json:"takes"`
	Reason   string `json:"reason"`
}

// Nodes are the placement plugins' verdicts on every node.
type Nodes struct {
	Total    int `json:"total"`
	Feasible int `json:"feasible"`
	// Reasons group the refused nodes by the first plugin that refused
	// them and its message, most nodes first.
	Reasons []ReasonCount `json:"reasons,omitempty"`
	// Refused lists every refused node (only with --nodes).
	Refused []NodeVerdict `json:"refused,omitempty"`
	// Top are the best-scored feasible nodes, best first.
	Top []NodeScore `json:"top,omitempty"`
}

// ReasonCount is one refusal reason and the nodes it applies to.
type ReasonCount struct {
	Plugin string   `json:"plugin"`
	Reason string   `json:"reason"`
	Count  int      `json:"count"`
	Nodes  []string `json:"nodes"`
}

// NodeVerdict is why one node does not take the pod.
type NodeVerdict struct {
	Node   string `json:"node"`
	Plugin string `json:"plugin"`
	Reason string `json:"reason"`
}

// NodeScore is a feasible node's score and each plugin's part of it.
type NodeScore struct {
	Node    string        `json:"node"`
	Total   int64         `json:"total"`
	Plugins []PluginScore `json:"plugins"`
}

// PluginScore is one plugin's weighted score on a node and its share of
// the node's total, in percent.
type PluginScore struct {
	Plugin  string  `json:"plugin"`
	Score   int64   `json:"score"`
	Percent float64 `json:"percent"`
}

// Reservation is the capacity a pod holds.
type Reservation struct {
	Policy string    `json:"policy"`
	Node   string    `json:"node"`
	Since  time.Time `json:"since"`
	// Durable: recorded in the policy's status.reservations, so it
	// survives an operator restart. bindgate records every reservation
	// before its pod is reported waiting; one held in the operator's
	// memory only is not visible here.
	Durable        bool       `json:"durable"`
	PermitDeadline *time.Time `json:"permitDeadline,omitempty"`
}

// Verdicts of permit conditions.
const (
	VerdictApproved     = "Approved"
	VerdictWaiting      = "Waiting"
	VerdictRejected     = "Rejected"
	VerdictNotEvaluated = "NotEvaluated"
)

// ConditionVerdict is one permit condition's current verdict.
type ConditionVerdict struct {
	Name string `json:"name"`
	// Kind is the condition's kind: expression, gang, volumes or webhook;
	// podgroup for the gang of the pod's upstream PodGroup.
	Kind    string `json:"kind"`
	Verdict string `json:"verdict"`
	Message string `json:"message,omitempty"`
}

// TimelineEntry is an event or a condition change of the pod.
type TimelineEntry struct {
	Time time.Time `json:"time"`
	// Source is "event" or "condition".
	Source  string `json:"source"`
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	Count   int32  `json:"count,omitempty"`
}

// ExplainOptions shape a report.
type ExplainOptions struct {
	// AllNodes lists every refused node, not only the grouped reasons.
	AllNodes bool
	// Top is how many feasible nodes' scores are shown (default 3).
	Top int
	// Timeline is how many of the latest timeline entries are kept (default 12).
	Timeline int
}
