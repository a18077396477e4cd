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
	"runtime/debug"
	"testing"
)

func TestApplyGCTarget(t *testing.T) {
	// The runtime has already applied a GOGC from the environment; the
	// test starts every case from a target no case sets by itself.
	const before = 123
	prev := debug.SetGCPercent(before)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	tests := map[string]struct {
		env  map[string]string
		want int
	}{
		"GOGC unset: bindgate's target": {
			want: gcPercent,
		},
		"GOGC set: the runtime's, left alone": {
			env:  map[string]string{"GOGC": "100"},
			want: before,
		},
		"GOGC set empty: still the environment's": {
			env:  map[string]string{"GOGC": ""},
			want: before,
		},
		"GOMEMLIMIT alone: bindgate's target under the limit": {
			env:  map[string]string{"GOMEMLIMIT": "512MiB"},
			want: gcPercent,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			debug.SetGCPercent(before)
			applyGCTarget(func(key string) (string, bool) {
				v, ok := tc.env[key]
				return v, ok
			})
			if got := debug.SetGCPercent(before); got != tc.want {
				t.Errorf("GC target after applyGCTarget = %d, want %d", got, tc.want)
			}
		})
	}
}
