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

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/bindgate/bindgate/internal/admission/certs"
	"github.com/bindgate/bindgate/internal/admission/podgate"
	policywebhook "github.com/bindgate/bindgate/internal/admission/policy"
	"github.com/bindgate/bindgate/internal/options"
	"github.com/bindgate/bindgate/internal/policy"
)

// registerAdmission registers the admission webhook handlers (pod gate,
// BindingPolicy validation) on the manager's webhook
// server (the first registration starts it, so it runs only once a serving
// certificate exists).
func registerAdmission(mgr ctrl.Manager, podMode podgate.Mode, policies policy.Validator) error {
	if err := podgate.Setup(mgr, podMode); err != nil {
		return err
	}
	return policywebhook.Setup(mgr, policies)
}

// setupAdmission wires the admission webhook server per --webhook-cert-mode
// and a readiness check that holds until it serves.
func setupAdmission(ctx context.Context, mgr ctrl.Manager, o options.Admission, namespace string, policies policy.Validator) error {
	if o.CertMode == options.CertModeNone {
		return nil
	}
	var serving atomic.Bool
	switch o.CertMode {
	case options.CertModeCertMgr:
		if err := registerAdmission(mgr, podgate.Mode(o.PodMode), policies); err != nil {
			return fmt.Errorf("setting up the webhooks: %w", err)
		}
		serving.Store(true)
	case options.CertModeSelfSigned:
		o.Certs.Namespace = namespace
		ready, err := certs.SetupRotator(mgr, o.Certs)
		if err != nil {
			return fmt.Errorf("setting up the webhook certificate rotator: %w", err)
		}
		go func() {
			select {
			case <-ready:
			case <-ctx.Done():
				return
			}
			if err := registerAdmission(mgr, podgate.Mode(o.PodMode), policies); err != nil {
				ctrl.Log.WithName("setup").Error(err, "Unable to set up the webhooks")
				os.Exit(1)
			}
			serving.Store(true)
		}()
	}
	if err := mgr.AddReadyzCheck("webhook", func(req *http.Request) error {
		if !serving.Load() {
			return errors.New("the webhook serving certificate is not ready yet")
		}
		return mgr.GetWebhookServer().StartedChecker()(req)
	}); err != nil {
		return fmt.Errorf("adding the webhook ready check: %w", err)
	}
	return nil
}
