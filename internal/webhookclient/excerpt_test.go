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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExcerpt(t *testing.T) {
	cases := map[string]struct {
		in   string
		max  int
		want string
	}{
		"plain":                      {in: "quota exceeded", max: 64, want: "quota exceeded"},
		"newlines and tabs collapse": {in: "line one\n\n\tline two\r\n", max: 64, want: "line one line two"},
		"forged log line":            {in: "ok\nI1201 fake log entry", max: 64, want: "ok I1201 fake log entry"},
		"terminal escapes dropped":   {in: "\x1b[31mred\x1b[0m", max: 64, want: "[31mred [0m"},
		"invalid UTF-8 dropped":      {in: "a\xffb", max: 64, want: "ab"},
		"cut with ellipsis":          {in: strings.Repeat("x", 100), max: 10, want: "xxxxxxx..."},
		"cut on a character boundary": {
			in: "ééééé", max: 8, want: "éé...",
		},
		"html body cut": {
			in: "<html>\n<body>\n<h1>502 Bad Gateway</h1>\n</body></html>", max: 24, want: "<html> <body> <h1>502...",
		},
		"no limit":    {in: strings.Repeat("y", 2000), max: 0, want: strings.Repeat("y", 2000)},
		"only spaces": {in: " \n\t ", max: 10, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Excerpt(tc.in, tc.max)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tc.max > 0 && len(got) > tc.max {
				t.Errorf("%d bytes, over the cap %d", len(got), tc.max)
			}
		})
	}
}
