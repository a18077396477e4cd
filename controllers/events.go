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
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// MaxEventNote is the longest note the API server accepts on an
// events.k8s.io/v1 Event (validation refuses longer ones, and the event
// is lost).
const MaxEventNote = 1024

// boundedRecorder cuts every note to MaxEventNote bytes (on a character
// boundary, ending in "..."), so that no event is refused for its length:
// a reason from a permit condition or webhook can be of any length.
type boundedRecorder struct{ events.EventRecorder }

// Eventf implements events.EventRecorder.
func (r boundedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if len(args) > 0 {
		note = fmt.Sprintf(note, args...)
	}
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", TruncateNote(note))
}

// TruncateNote cuts note to MaxEventNote bytes.
func TruncateNote(note string) string {
	if len(note) <= MaxEventNote {
		return note
	}
	const ellipsis = "..."
	cut := MaxEventNote - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + ellipsis
}
