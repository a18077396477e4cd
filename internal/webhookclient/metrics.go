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

package webhookclient

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Values of the code label besides HTTP status codes.
const (
	codeError   = "error"
	codeTimeout = "timeout"
	codeRefused = "refused"
)

var (
	requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bindgate_webhook_requests_total",
		Help: "Outbound webhook calls (never the admission webhooks) by kind (permit: a PermitWebhook condition, bind: the BindHook, " +
			"postBind: a PostBindHook), webhook name and result code (the HTTP status, or error, timeout, refused).",
	}, []string{"kind", "webhook", "code"})

	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "bindgate_webhook_duration_seconds",
		Help:    "Duration of outbound webhook calls that were attempted (PermitWebhook, BindHook, PostBindHook), by kind and webhook name.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14), // 5ms .. ~41s
	}, []string{"kind", "webhook"})
)

func init() {
	metrics.Registry.MustRegister(requestsTotal, requestDuration)
}
