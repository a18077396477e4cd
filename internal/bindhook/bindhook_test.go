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

package bindhook

import (
	"strings"
	"testing"
	"time"
)

func TestBackoffDoublesPerPodAndResets(t *testing.T) {
	c := &Caller{BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	var got []time.Duration
	for range 6 {
		got = append(got, c.backoff("a"))
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("backoffs = %v", got)
		}
	}
	if d := c.backoff("b"); d != 100*time.Millisecond {
		t.Errorf("another pod starts at %s", d)
	}
	c.Forget("a")
	if d := c.backoff("a"); d != 100*time.Millisecond {
		t.Errorf("after Forget: %s", d)
	}
}

func TestAnswerMessage(t *testing.T) {
	for body, want := range map[string]string{
		``:                                "",
		`{"message":"no licenses"}`:       ": no licenses",
		`plain text`:                      ": plain text",
		strings.Repeat("x", 300):          ": " + strings.Repeat("x", 253) + "...",
		"<html>\n<body>502\x1b[0m</body>": ": <html> <body>502 [0m</body>",
	} {
		if got := answerMessage([]byte(body)); got != want {
			t.Errorf("answerMessage(%.20q) = %q, want %q", body, got, want)
		}
	}
	if got := Display("https://user:pw@hooks.example:8443/bind?token=x"); got != "https://hooks.example:8443/bind" {
		t.Errorf("Display = %q", got)
	}
}
