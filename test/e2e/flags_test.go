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

package e2e

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestInvalidFlags: the binary refuses a bad value of its own flags at
// start, naming the flag and the values it takes, before it connects to any
// API server (no kubeconfig is given, and none is needed to fail).
func TestInvalidFlags(t *testing.T) {
	operator := buildOperator(t)
	cases := map[string]struct {
		args []string
		want string
	}{
		"pod webhook mode": {
			args: []string{"--pod-webhook-mode=schedulerName"},
			want: `--pod-webhook-mode=\"schedulerName\": want gate or scheduler-name`,
		},
		"webhook cert mode": {
			args: []string{"--webhook-cert-mode=acme"},
			want: `--webhook-cert-mode=\"acme\": want self-signed, cert-manager or none`,
		},
		"durable reservations": {
			args: []string{"--durable-reservations=sometimes"},
			want: `--durable-reservations=\"sometimes\": want auto, waiting or always`,
		},
		"webhook allowed CIDRs": {
			args: []string{"--webhook-allowed-cidrs=127.0.0.1"},
			want: `--webhook-allowed-cidrs: "127.0.0.1" is not a CIDR`,
		},
		"unknown flag": {
			args: []string{"--wrokers=4"},
			want: "flag provided but not defined: -wrokers",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), operator, tc.args...)
			cmd.Env = []string{"KUBECONFIG=/nonexistent", "HOME=" + t.TempDir()}
			cmd.WaitDelay = 10 * time.Second
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("%v: exited with %v, want a non-zero exit status\n%s", tc.args, err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, tc.want, out)
			}
		})
	}
}
