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

// Package controllers holds the thin reconcilers: they fetch objects, call
// into internal/ for the binding cycle, and write status.
package controllers

import (
	"flag"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Options are the operator's tunables, bound to command-line flags.
type Options struct {
	// Workers is the number of pods cycled concurrently.
	Workers int
}

// BindFlags registers the options on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.Workers, "workers", 16, "Number of pods that run the binding cycle concurrently.")
}

// SetupWithManager registers every controller with mgr.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if err := (&BindingPolicyReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("bindgate"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the BindingPolicy controller: %w", err)
	}
	return nil
}
