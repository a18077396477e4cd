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

package testenv_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bindgate/bindgate/internal/testenv"
)

func TestMetric(t *testing.T) {
	page := []byte(`# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 218
go_goroutines_extra 5
leader_election_master_status{name="bindgate.scheduling.bindgate.dev"} 1
process_resident_memory_bytes 8.5e+07
broken_metric abc
`)
	type result struct {
		V   float64
		OK  bool
		Err bool
	}
	for name, want := range map[string]result{
		"go_goroutines":                 {V: 218, OK: true},
		"leader_election_master_status": {V: 1, OK: true},
		"process_resident_memory_bytes": {V: 8.5e7, OK: true},
		"go_gc_duration_seconds":        {},
		"go_goroutine":                  {},
		"broken_metric":                 {Err: true},
	} {
		t.Run(name, func(t *testing.T) {
			v, ok, err := testenv.Metric(page, name)
			if diff := cmp.Diff(want, result{V: v, OK: ok, Err: err != nil}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
