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

// Command bindgate runs the bindgate operator: the closing phases of
// scheduling (Reserve, Permit, PreBind, Bind, PostBind) for gated pods,
// driven by BindingPolicy objects.
package main

import (
	"flag"
	"os"
	"runtime/debug"

	uberzap "go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/cmd"
	"github.com/bindgate/bindgate/controllers"
	"github.com/bindgate/bindgate/internal/logging"
	"github.com/bindgate/bindgate/internal/options"
	"github.com/bindgate/bindgate/internal/policy"
)

var scheme = runtime.NewScheme()

// gcPercent is the Go GC target bindgate runs with when GOGC is not set.
// It holds what kube-scheduler holds (every pod and node, the scheduler
// cache and snapshot): at 5000 nodes / 10000 pods its live heap was 103-108
// MB against kube-scheduler's 107. So at Go's default of 100 its peak RSS
// is level with kube-scheduler's, and it was above it in 3 of 8 pairs. At
// 80 it is below its baselines' on make bench's workloads, and its own CPU
// per pod is level with kube-scheduler's; at 60 it had about 10 MiB more
// margin for 6-23% more of its own CPU (docs/benchmarks.md). GOGC, and
// GOMEMLIMIT (the chart sets it from the container's memory limit),
// override it.
const gcPercent = 80

// applyGCTarget sets the GC target to gcPercent unless the environment
// (lookup, os.LookupEnv in main) sets GOGC, which the runtime has already
// applied. GOMEMLIMIT is the runtime's too and holds either way.
func applyGCTarget(lookup func(string) (string, bool)) {
	if _, set := lookup("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
}

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(bindgatev1alpha1.AddToScheme(scheme))
}

func main() {
	if cmd.Handles(os.Args) {
		// Client subcommands (bindgate explain, kubectl bindgate ...).
		cmd.Main()
	}
	applyGCTarget(os.LookupEnv)
	var opts options.Options
	opts.AddFlags(flag.CommandLine)
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine) // --zap-devel, --zap-encoder, --zap-log-level, ...
	// --kubeconfig is registered by controller-runtime's config package.
	flag.Parse()

	// Fields given to a logger are encoded when a line is written, not for
	// every reconcile (internal/logging).
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts), zap.RawZapOpts(uberzap.WrapCore(logging.LazyFields))))
	setupLog := ctrl.Log.WithName("setup")
	if err := opts.Validate(); err != nil {
		setupLog.Error(err, "Invalid flags")
		os.Exit(1)
	}
	leaseNS := opts.Manager.LeaderElectionNamespace
	if leaseNS == "" {
		leaseNS = opts.Operator.Namespace
	}

	ctx := ctrl.SetupSignalHandler()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		setupLog.Error(err, "Unable to load a kubeconfig")
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(controllers.RESTConfig(cfg), ctrl.Options{
		Scheme:                  scheme,
		Cache:                   controllers.CacheOptions(),
		Metrics:                 metricsOptions(opts.Manager.MetricsAddr, opts.Manager.MetricsSecure),
		HealthProbeBindAddress:  opts.Manager.ProbeAddr,
		WebhookServer:           webhook.NewServer(webhook.Options{Port: opts.Admission.Port, CertDir: opts.Admission.Certs.CertDir}),
		PprofBindAddress:        opts.Manager.PprofAddr,
		LeaderElection:          opts.Manager.LeaderElection,
		LeaderElectionID:        "bindgate.scheduling.bindgate.dev",
		LeaderElectionNamespace: leaseNS,
		// The binding cycle stops at once when leadership is lost; a new
		// leader rebuilds its state from the policies' status.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		setupLog.Error(err, "Unable to create the manager")
		os.Exit(1)
	}
	if err := controllers.SetupWithManager(ctx, mgr, controllers.Options{
		Scheduling: opts.Scheduling, Outbound: opts.Outbound, Operator: opts.Operator, LeaderElection: opts.Manager.LeaderElection,
	}); err != nil {
		setupLog.Error(err, "Unable to set up the controllers")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "Unable to set up the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		setupLog.Error(err, "Unable to set up the ready check")
		os.Exit(1)
	}

	if err := setupAdmission(ctx, mgr, opts.Admission, opts.Operator.Namespace, policy.Validator{Destinations: opts.Outbound.Destinations()}); err != nil {
		setupLog.Error(err, "Unable to set up the admission webhooks")
		os.Exit(1)
	}

	setupLog.Info("Starting the manager")
	if err := mgr.Start(ctx); err != nil {
		setupLog.Error(err, "The manager stopped with an error")
		os.Exit(1)
	}
}

// The metrics endpoint's authentication and authorization filter asks the
// API server about each scraper's token.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsOptions serves /metrics on addr; secure puts it behind
// controller-runtime's authentication and authorization filter, over HTTPS
// with a self-signed certificate.
func metricsOptions(addr string, secure bool) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr, SecureServing: secure}
	if secure {
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}
