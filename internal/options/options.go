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

// Package options declares every command-line flag of the operator, one
// struct per concern; main binds them once (Options.AddFlags) and hands
// each concern to the code that uses it. Each flag's default is printed by
// --help once, by the flag package; descriptions do not repeat it.
package options

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/bindgate/bindgate/internal/admission/certs"
	"github.com/bindgate/bindgate/internal/admission/podgate"
	"github.com/bindgate/bindgate/internal/postbind"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// Options are all the operator's flags.
type Options struct {
	Manager    Manager
	Operator   Operator
	Scheduling Scheduling
	Outbound   Outbound
	Admission  Admission
}

// AddFlags binds every option to fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	o.Manager.AddFlags(fs)
	o.Operator.AddFlags(fs)
	o.Scheduling.AddFlags(fs)
	o.Outbound.AddFlags(fs)
	o.Admission.AddFlags(fs)
}

// Validate checks every option; the errors name the flags.
func (o *Options) Validate() error {
	return errors.Join(o.Operator.Validate(), o.Scheduling.Validate(), o.Admission.Validate())
}

// Manager are the controller manager's endpoints and leader election.
type Manager struct {
	MetricsAddr    string
	MetricsSecure  bool
	ProbeAddr      string
	PprofAddr      string
	LeaderElection bool
	// LeaderElectionNamespace holds the Lease ("": the operator's
	// namespace).
	LeaderElectionNamespace string
}

// AddFlags binds the options to fs.
func (o *Manager) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080",
		"The address the Prometheus metrics endpoint binds to. Use 0 to disable it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", true,
		"Serve /metrics over HTTPS to authenticated, authorized clients only: a bearer token the API server accepts (TokenReview) whose user may get the non-resource URL /metrics (SubjectAccessReview). false serves plain HTTP to anyone (for local runs).")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081",
		"The address the /healthz and /readyz endpoints bind to.")
	fs.BoolVar(&o.LeaderElection, "leader-elect", true,
		"Elect a leader so that only one replica runs the binding cycle at a time.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease; empty means --operator-namespace.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "",
		"The address net/http/pprof is served on (e.g. localhost:6060); empty disables it.")
}

// DefaultSealKeySecret is the Secret, in the operator's namespace, that
// holds the key of the seals on bindgate's pod bookkeeping (see
// internal/bind). Both installs create it empty; the first replica to start
// fills it, and every replica and restart uses the same key.
const DefaultSealKeySecret = "bindgate-seal-key"

// Operator says where the operator's own objects live.
type Operator struct {
	// Namespace is the operator's namespace: the only one webhook signing
	// Secrets are read from; it holds the seal key Secret, the
	// self-signed webhook certificate and (by default) the leader Lease.
	Namespace string
	// SealKeySecret names the Secret in Namespace that holds the seal key.
	SealKeySecret string
}

// AddFlags binds the options to fs.
func (o *Operator) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Namespace, "operator-namespace", DefaultNamespace(),
		"The operator's namespace: the only one webhook signing Secrets are read from, and where the seal key, the self-signed webhook certificate and the leader election Lease live. $POD_NAMESPACE, else the pod's ServiceAccount namespace, sets the default.")
	fs.StringVar(&o.SealKeySecret, "seal-key-secret", DefaultSealKeySecret,
		"The Secret, in the operator's namespace, that holds the key bindgate seals its pod bookkeeping with (created or filled when empty): a pod's policy record without a valid seal is charged to no policy and gets no PostBind notice.")
}

// Validate checks the options.
func (o *Operator) Validate() error {
	if o.Namespace == "" {
		return errors.New("--operator-namespace is empty: the seal key Secret lives in the operator's namespace")
	}
	return nil
}

// serviceAccountNamespace is where a pod's ServiceAccount namespace is
// mounted.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// DefaultNamespace is the one source of the operator's namespace: the
// Downward API's $POD_NAMESPACE (both installs set it), else the mounted
// ServiceAccount's namespace, else bindgate-system.
func DefaultNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "bindgate-system"
}

// Values of --durable-reservations.
const (
	DurableAuto    = "auto"
	DurableWaiting = "waiting"
	DurableAlways  = "always"
)

// Scheduling tunes the binding cycle.
type Scheduling struct {
	// Workers is the number of pods cycled concurrently.
	Workers int
	// BindConcurrency bounds the asynchronous binds in flight.
	BindConcurrency int
	// UngateConcurrency bounds the gate lifts in flight ahead of the binds
	// (0: 64; negative: each gate is lifted on its bind's goroutine).
	UngateConcurrency int
	// DurableReservations is auto (also when empty), always or waiting.
	DurableReservations string
	// PercentageOfNodesToScore overrides the adaptive node sample (0:
	// adaptive).
	PercentageOfNodesToScore int
	// Parallelism bounds the goroutines the Filter and Score plugins run
	// in over the nodes, as kube-scheduler's parallelism (0: 16).
	Parallelism int
}

// AddFlags binds the options to fs.
func (o *Scheduling) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.Workers, "workers", 16, "Number of pods that run the binding cycle concurrently.")
	fs.StringVar(&o.DurableReservations, "durable-reservations", DurableAuto,
		"Which reservations are recorded in the policy's status before the pod goes on: auto (always when --leader-elect=false, else waiting), waiting (those of pods that wait in Permit or call a bind webhook; the rest bind at once, safe only while leader election keeps a single active replica) or always (every one; the ledger's optimistic concurrency then keeps replicas running without leader election from double-booking).")
	fs.IntVar(&o.BindConcurrency, "bind-concurrency", 64,
		"Binds in flight at once: reserved and permitted pods are bound by a pool of this many goroutines, apart from the workers (as kube-scheduler's binding cycle runs apart from its scheduling cycle); up to 4 binds per goroutine wait in a queue, so workers move on to the next pod while every bind goroutine is busy.")
	fs.IntVar(&o.UngateConcurrency, "ungate-concurrency", 64,
		"Gate lifts in flight at once: a gated pod's gate is lifted (and the pod pinned to its node) by a pool of this many goroutines ahead of its binding, as a controller that lifts gates runs ahead of kube-scheduler; ungated pods then wait for a bind goroutine in the bind queue (4 per --bind-concurrency). A negative value lifts each gate on the bind's own goroutine, right before the binding.")
	fs.IntVar(&o.PercentageOfNodesToScore, "percentage-of-nodes-to-score", 0,
		"Percentage of nodes to find feasible before scoring, as kube-scheduler's percentageOfNodesToScore; 0 adapts to cluster size.")
	fs.IntVar(&o.Parallelism, "parallelism", 16,
		"Goroutines the Filter and Score plugins run in over the nodes in one cycle, as kube-scheduler's parallelism.")
}

// Validate checks the options.
func (o *Scheduling) Validate() error {
	switch o.DurableReservations {
	case "", DurableAuto, DurableWaiting, DurableAlways:
	default:
		return fmt.Errorf("--durable-reservations=%q: want auto, waiting or always", o.DurableReservations)
	}
	if o.PercentageOfNodesToScore < 0 || o.PercentageOfNodesToScore > 100 {
		return fmt.Errorf("--percentage-of-nodes-to-score=%d: want 0 to 100", o.PercentageOfNodesToScore)
	}
	if o.Parallelism < 0 {
		return fmt.Errorf("--parallelism=%d: want a positive number (0 means 16)", o.Parallelism)
	}
	return nil
}

// DurableAll says whether every reservation is recorded in the policy's
// status before its bind: always, or auto (and unset) without leader
// election, when replicas may run the cycle at once and only the ledger's
// optimistic concurrency keeps them from double-booking.
func (o *Scheduling) DurableAll(leaderElection bool) bool {
	switch o.DurableReservations {
	case DurableAlways:
		return true
	case DurableWaiting:
		return false
	default:
		return !leaderElection
	}
}

// Outbound tunes the webhooks the operator calls: the PermitWebhook
// condition, the BindHook and the PostBindHooks.
type Outbound struct {
	// AllowLinkLocalWebhooks lets webhooks reach link-local and
	// cloud-metadata addresses.
	AllowLinkLocalWebhooks bool
	// AllowedWebhookCIDRs are address ranges webhooks may reach even inside
	// the refused ones (loopback, unspecified, link-local, metadata,
	// multicast, broadcast).
	AllowedWebhookCIDRs []netip.Prefix
	// WebhookBaseBackoff is the first retry delay of the BindHook and of
	// PostBindHook deliveries (0: 1s); it doubles per attempt.
	WebhookBaseBackoff time.Duration
	// PostBindWorkersPerHook bounds the concurrent calls to one
	// PostBindHook (0: 4).
	PostBindWorkersPerHook int
}

// AddFlags binds the options to fs.
func (o *Outbound) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.AllowLinkLocalWebhooks, "allow-link-local-webhooks", false,
		"Let outbound webhooks reach link-local and cloud-metadata addresses (169.254.0.0/16, fe80::/10, fd00:ec2::254).")
	fs.Func("webhook-allowed-cidrs",
		"Comma-separated CIDRs outbound webhooks may reach although they are refused by default (loopback 127.0.0.0/8 and ::1, unspecified, link-local, cloud metadata, multicast, broadcast), e.g. 127.0.0.1/32 for a receiver beside the operator.",
		func(v string) error {
			cidrs, err := webhookclient.ParseCIDRs(v)
			if err != nil {
				return fmt.Errorf("--webhook-allowed-cidrs: %w", err)
			}
			o.AllowedWebhookCIDRs = append(o.AllowedWebhookCIDRs, cidrs...)
			return nil
		})
	fs.DurationVar(&o.WebhookBaseBackoff, "webhook-base-backoff", postbind.DefaultBaseBackoff,
		"First retry delay of bind hook calls and PostBind deliveries; it doubles per attempt.")
	fs.IntVar(&o.PostBindWorkersPerHook, "postbind-workers-per-hook", postbind.DefaultWorkersPerHook,
		"Concurrent deliveries per PostBind hook.")
}

// Destinations are the addresses outbound webhooks may reach.
func (o *Outbound) Destinations() webhookclient.Destinations {
	return webhookclient.Destinations{AllowLinkLocal: o.AllowLinkLocalWebhooks, AllowCIDRs: o.AllowedWebhookCIDRs}
}

// Admission certificate modes (--webhook-cert-mode).
const (
	CertModeNone       = "none"
	CertModeSelfSigned = "self-signed"
	CertModeCertMgr    = "cert-manager"
)

// Admission configures the admission webhook server (the pod gate
// mutating webhook and the BindingPolicy validating webhook).
type Admission struct {
	CertMode string
	PodMode  string
	Port     int
	// Certs configure the self-signed certificate rotator (its Namespace
	// is the operator's).
	Certs certs.Options
}

// AddFlags binds the options to fs.
func (o *Admission) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.CertMode, "webhook-cert-mode", CertModeNone,
		"Serve the admission webhooks, and who provides their serving certificate: self-signed (the operator generates and rotates it in --webhook-cert-secret), cert-manager (mounted in --webhook-cert-dir by cert-manager), or none (no admission webhook).")
	fs.StringVar(&o.PodMode, "pod-webhook-mode", string(podgate.ModeGate),
		"How the pod admission webhook hands new pods to bindgate: gate (add the scheduling gate; bindgate lifts it with one more API write before binding) or scheduler-name (set spec.schedulerName: bindgate on pods left to the default scheduler, which saves that write; pods naming another scheduler are gated).")
	fs.IntVar(&o.Port, "webhook-port", 9443, "The port the admission webhook server listens on.")
	fs.StringVar(&o.Certs.CertDir, "webhook-cert-dir", certs.DefaultCertDir, "The directory holding the admission webhook's tls.crt and tls.key (the mounted Secret).")
	fs.StringVar(&o.Certs.SecretName, "webhook-cert-secret", certs.DefaultSecretName, "self-signed: the Secret, in the operator's namespace, that holds the serving certificate.")
	fs.StringVar(&o.Certs.ServiceName, "webhook-service-name", certs.DefaultServiceName, "self-signed: the admission webhook Service the certificate is issued for.")
	fs.StringVar(&o.Certs.WebhookConfigName, "webhook-config-name", certs.DefaultWebhookConfigName, "self-signed: the MutatingWebhookConfiguration whose caBundle is kept in sync.")
	fs.StringVar(&o.Certs.ValidatingWebhookConfigName, "validating-webhook-config-name", certs.DefaultValidatingWebhookConfigName, "self-signed: the ValidatingWebhookConfiguration (BindingPolicy checks) whose caBundle is kept in sync; empty to leave it alone.")
}

// Validate checks the options.
func (o *Admission) Validate() error {
	if _, err := podgate.ParseMode(o.PodMode); err != nil {
		return err
	}
	switch o.CertMode {
	case CertModeNone, CertModeSelfSigned, CertModeCertMgr:
		return nil
	}
	return fmt.Errorf("--webhook-cert-mode=%q: want self-signed, cert-manager or none", o.CertMode)
}
