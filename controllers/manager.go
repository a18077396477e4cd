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

package controllers

import (
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

// RESTConfig returns a copy of cfg as the operator's clients use it: without
// response compression, as kube-scheduler's clients (it sets
// DisableCompression too). Otherwise the API server gzips every event of the
// informers' watch-list streams, each flush on its own — CPU it and the
// operator spend on every pod update, for a connection that usually stays
// inside the cluster.
func RESTConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.DisableCompression = true
	return cfg
}

// CacheOptions keeps only what the cycle needs in the informer cache:
// managedFields are stripped from every object.
func CacheOptions() crcache.Options {
	return crcache.Options{DefaultTransform: crcache.TransformStripManagedFields()}
}
