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
	"unicode"
	"unicode/utf8"
)

// Excerpt is the text a receiver sent (an error body, a reason) made fit
// for events and conditions: control and other non-printable characters
// (newlines, escapes that would forge log or terminal output) become
// spaces, runs of white space one space, invalid UTF-8 is dropped, and the
// result is cut to at most max bytes on a character boundary, ending in
// "..." when cut.
func Excerpt(s string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) || unicode.IsSpace(r) {
			if r != utf8.RuneError {
				space = b.Len() > 0
			}
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	if max <= 0 || len(out) <= max {
		return out
	}
	const ellipsis = "..."
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	if cut < 0 {
		cut = 0
	}
	return strings.TrimRight(out[:cut], " ") + ellipsis
}
