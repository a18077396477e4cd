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

package options_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bindgate/bindgate/internal/options"
)

// TestDurableAll: the default never leaves replicas without leader
// election to record only some reservations.
func TestDurableAll(t *testing.T) {
	cases := map[string]struct {
		mode          string
		leaderElected bool
		want          bool
	}{
		"unset, no leader election":                       {mode: "", want: true},
		"unset, leader election":                          {mode: "", leaderElected: true, want: false},
		"auto, no leader election":                        {mode: options.DurableAuto, want: true},
		"auto, leader election":                           {mode: options.DurableAuto, leaderElected: true, want: false},
		"always, leader election":                         {mode: options.DurableAlways, leaderElected: true, want: true},
		"always, no leader election":                      {mode: options.DurableAlways, want: true},
		"waiting, leader election":                        {mode: options.DurableWaiting, leaderElected: true, want: false},
		"waiting, no leader election (explicitly unsafe)": {mode: options.DurableWaiting, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := options.Scheduling{DurableReservations: tc.mode}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := o.DurableAll(tc.leaderElected); got != tc.want {
				t.Errorf("DurableAll() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestValidate: bad values are refused naming the flag.
func TestValidate(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string // substring of the error; empty: valid
	}{
		"defaults":                 {},
		"unknown durability":       {args: []string{"--durable-reservations=sometimes"}, want: "--durable-reservations"},
		"percentage over 100":      {args: []string{"--percentage-of-nodes-to-score=101"}, want: "--percentage-of-nodes-to-score"},
		"negative parallelism":     {args: []string{"--parallelism=-1"}, want: "--parallelism"},
		"unknown cert mode":        {args: []string{"--webhook-cert-mode=vault"}, want: "--webhook-cert-mode"},
		"empty operator namespace": {args: []string{"--operator-namespace="}, want: "--operator-namespace"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var o options.Options
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error = %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// TestOperatorNamespace: $POD_NAMESPACE sets the default of
// --operator-namespace, the one source of the operator's namespace.
func TestOperatorNamespace(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "ops")
	var o options.Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("ops", o.Operator.Namespace); diff != "" {
		t.Errorf("namespace (-want +got):\n%s", diff)
	}
}

// TestHelpPrintsEachDefaultOnce: no description restates the default the
// flag package prints after it.
func TestHelpPrintsEachDefaultOnce(t *testing.T) {
	var o options.Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.AddFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if strings.Contains(strings.ToLower(f.Usage), "default:") || strings.Contains(strings.ToLower(f.Usage), "(default") {
			t.Errorf("--%s: the description states a default: %q", f.Name, f.Usage)
		}
	})
}
