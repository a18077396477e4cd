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

package controllers_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bindgate/bindgate/controllers"
)

func TestTruncateNote(t *testing.T) {
	cases := map[string]struct {
		in      string
		wantLen int
		cut     bool
	}{
		"short":            {in: "Successfully assigned ns/p to n1", wantLen: 32},
		"at the limit":     {in: strings.Repeat("a", controllers.MaxEventNote), wantLen: controllers.MaxEventNote},
		"over the limit":   {in: strings.Repeat("a", 5000), wantLen: controllers.MaxEventNote, cut: true},
		"multi-byte runes": {in: strings.Repeat("é", 600), wantLen: controllers.MaxEventNote - 1, cut: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := controllers.TruncateNote(tc.in)
			if len(got) != tc.wantLen || strings.HasSuffix(got, "...") != tc.cut || !utf8.ValidString(got) {
				t.Errorf("%d bytes (cut %v, valid UTF-8 %v), want %d (cut %v)", len(got), strings.HasSuffix(got, "..."), utf8.ValidString(got), tc.wantLen, tc.cut)
			}
		})
	}
}
