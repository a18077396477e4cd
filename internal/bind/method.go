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

package bind

import (
	"context"
	"net/http"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// DetectMethod asks the API server its version once: pods are ungated by a
// whole-pod update when it is not newer than this binary, else by a patch
// (also when the version cannot be read).
func DetectMethod(ctx context.Context, cfg *rest.Config, hc *http.Client) Method {
	log := ctrl.LoggerFrom(ctx).WithName("setup")
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		log.Error(err, "Unable to create a discovery client; ungating by patch")
		return ByPatch
	}
	info, err := dc.ServerVersion()
	if err != nil {
		log.Error(err, "Unable to read the API server version; ungating by patch")
		return ByPatch
	}
	m := MethodFor(info)
	log.Info("Chose how to lift the scheduling gate", "method", m, "apiServerVersion", info.GitVersion)
	return m
}
