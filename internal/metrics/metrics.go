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

// Package metrics defines bindgate's Prometheus metrics on
// controller-runtime's registry, served on the manager's metrics endpoint.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of a scheduling attempt.
const (
	ResultScheduled     = "scheduled"
	ResultUnschedulable = "unschedulable"
	ResultError         = "error"
	ResultWaiting       = "waiting"
)

var (
	// ScheduleAttempts counts cycles by result and policy.
	ScheduleAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bindgate_schedule_attempts_total",
		Help: "Binding cycles run, by result (scheduled, unschedulable, waiting, error) and policy.",
	}, []string{"result", "policy"})

	// SchedulingDuration is the time from the gate seen to the pod bound.
	SchedulingDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "bindgate_scheduling_duration_seconds",
		Help:    "Time from the moment bindgate first saw a gated pod to its bind.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 20),
	})

	// ExtensionPointDuration times each phase.
	ExtensionPointDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "bindgate_extension_point_duration_seconds",
		Help:    "Duration of each extension point (Filter, Score, Reserve, Permit, PreBind, Bind) per cycle.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	}, []string{"extension_point"})

	// BindingDuration times the bind API calls (gate patch and binding).
	BindingDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "bindgate_binding_duration_seconds",
		Help:    "Duration of the bind: the gate-removal patch and the pods/binding call.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	})

	// Reservations is the number of reservations each policy holds.
	Reservations = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "bindgate_reservations",
		Help: "Reservations held, per policy.",
	}, []string{"policy"})

	// LedgerWrites counts status writes of the reservation ledger.
	LedgerWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "bindgate_ledger_writes_total",
		Help: "Status writes made by the reservation ledger (each a group commit).",
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(ScheduleAttempts, SchedulingDuration, ExtensionPointDuration,
		BindingDuration, Reservations, LedgerWrites)
}

// Results of the permit phase of a pod that has permit conditions.
const (
	PermitAllowed  = "allowed"
	PermitRejected = "rejected"
	PermitTimeout  = "timeout"
)

// PermitWaitDuration is the time from the reservation to the permit verdict.
var PermitWaitDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "bindgate_permit_wait_duration_seconds",
	Help:    "Time a reserved pod spent in Permit, from its reservation to the verdict, by result (allowed, rejected, timeout) and policy.",
	Buckets: prometheus.ExponentialBuckets(0.01, 2, 18),
}, []string{"result", "policy"})

func init() {
	ctrlmetrics.Registry.MustRegister(PermitWaitDuration, GangsPlaced)
}

// GangsPlaced counts the gangs placed together, by policy and the node
// label of the topology domain they were placed in ("" without topology
// or when spread across domains).
var GangsPlaced = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "bindgate_gangs_placed_total",
	Help: "Gangs whose members were placed together, by policy and topology level (the domain's node label; empty without topology or when spread).",
}, []string{"policy", "level"})

// DryRunDecisions counts the would-be decisions of DryRun policies.
var DryRunDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "bindgate_dry_run_decisions_total",
	Help: "Pods a DryRun policy would have taken, by policy and outcome (Bind, Wait, Refuse, Unschedulable): one decision per pod and policy.",
}, []string{"policy", "outcome"})

func init() {
	ctrlmetrics.Registry.MustRegister(DryRunDecisions)
}
