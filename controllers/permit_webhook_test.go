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
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/permit"
)

// permitServer answers PermitReviews by path: /approve, /reject, /wait
// (wait once per pod, then approve), /hang, /malformed, /500, /oversize.
type permitServer struct {
	srv  *httptest.Server
	stop chan struct{}

	mu    sync.Mutex
	calls map[string]int // path + pod name -> calls
	bad   []string
}

func newPermitServer(t *testing.T) *permitServer {
	t.Helper()
	s := &permitServer{stop: make(chan struct{}), calls: map[string]int{}}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.stop)
		s.srv.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, b := range s.bad {
			t.Error(b)
		}
	})
	return s
}

func (s *permitServer) serve(rw http.ResponseWriter, req *http.Request) {
	var review permit.PermitReview
	if err := json.NewDecoder(req.Body).Decode(&review); err != nil || review.Request == nil ||
		review.APIVersion != permit.PermitReviewAPIVersion || review.Kind != permit.PermitReviewKind ||
		review.Request.UID == "" || review.Request.Node == "" || review.Request.Policy == "" || review.Request.Pod.UID == "" {
		s.mu.Lock()
		s.bad = append(s.bad, fmt.Sprintf("bad PermitReview (%v): %+v", err, review))
		s.mu.Unlock()
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls[req.URL.Path+"/"+review.Request.Pod.Name]++
	n := s.calls[req.URL.Path+"/"+review.Request.Pod.Name]
	s.mu.Unlock()
	answer := func(r permit.PermitReviewResponse) {
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(permit.PermitReview{
			APIVersion: permit.PermitReviewAPIVersion, Kind: permit.PermitReviewKind, Response: &r,
		})
	}
	switch req.URL.Path {
	case "/approve":
		answer(permit.PermitReviewResponse{Allowed: true})
	case "/reject":
		answer(permit.PermitReviewResponse{Reason: "quota exhausted for team a"})
	case "/wait":
		if n == 1 {
			answer(permit.PermitReviewResponse{Wait: true, Reason: "warming up", RetryAfterSeconds: 1})
			return
		}
		answer(permit.PermitReviewResponse{Allowed: true})
	case "/hang":
		select {
		case <-req.Context().Done():
		case <-s.stop:
		}
	case "/malformed":
		_, _ = rw.Write([]byte(`{"response": {"allowed": tru`))
	case "/500":
		http.Error(rw, "boom", http.StatusInternalServerError)
	case "/longreason":
		answer(permit.PermitReviewResponse{Reason: "line one\nline two " + strings.Repeat("x", 4000)})
	case "/oversize":
		_, _ = rw.Write([]byte(`{"response": {"allowed": true, "reason": "` + strings.Repeat("x", 128<<10) + `"}}`))
	default:
		http.NotFound(rw, req)
	}
}

func (s *permitServer) count(path, pod string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path+"/"+pod]
}

// withPermitWebhook adds one webhook condition named "review".
func (s *permitServer) withPermitWebhook(path string, callTimeout, permitTimeout time.Duration, fp bindgatev1alpha1.FailurePolicy) func(*bindgatev1alpha1.BindingPolicy) {
	return func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.Permit = &bindgatev1alpha1.Permit{
			Timeout: &metav1.Duration{Duration: permitTimeout},
			Conditions: []bindgatev1alpha1.PermitCondition{{Name: "review", Webhook: &bindgatev1alpha1.PermitWebhook{
				Webhook: bindgatev1alpha1.Webhook{
					URL:      s.srv.URL + path,
					Timeout:  &metav1.Duration{Duration: callTimeout},
					CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw}),
				},
				FailurePolicy: fp,
			}}},
		}
	}
}

func permittedMessage(t *testing.T, ns, name string) string {
	c := podCondition(getPod(t, ns, name), bindgatev1alpha1.PodConditionPermitted)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason + ": " + c.Message
}

func TestPermitWebhook(t *testing.T) {
	startManager(t, 4)
	srv := newPermitServer(t)
	const (
		fail   = bindgatev1alpha1.FailurePolicyFail
		ignore = bindgatev1alpha1.FailurePolicyIgnore
	)
	cases := []struct {
		name, path string
		fp         bindgatev1alpha1.FailurePolicy
		// bind: the pod binds; otherwise it waits (or is rejected) with a
		// Permitted condition containing want.
		bind bool
		want string
	}{
		{name: "approve", path: "/approve", fp: fail, bind: true},
		{name: "reject", path: "/reject", fp: fail, want: "False/Rejected: rejected by permit condition review: quota exhausted for team a"},
		{name: "wait-then-approve", path: "/wait", fp: fail, bind: true},
		{name: "hang-fail", path: "/hang", fp: fail, want: "False/Waiting: review: webhook call failed (failurePolicy Fail)"},
		{name: "hang-ignore", path: "/hang", fp: ignore, bind: true},
		// failurePolicy covers only calls that got no answer: a malformed
		// or non-2xx answer is never an approval.
		{name: "malformed-fail", path: "/malformed", fp: fail, want: "False/Waiting: review: webhook answer not usable: malformed response"},
		{name: "malformed-ignore", path: "/malformed", fp: ignore, want: "False/Waiting: review: webhook answer not usable: malformed response"},
		{name: "500-fail", path: "/500", fp: fail, want: "webhook answer not usable: HTTP 500"},
		{name: "500-ignore", path: "/500", fp: ignore, want: "webhook answer not usable: HTTP 500"},
		{name: "oversize-fail", path: "/oversize", fp: fail, want: "exceeds"},
		{name: "long-reason-cut", path: "/longreason", fp: fail, want: "False/Rejected: rejected by permit condition review: line one line two xxxx"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pol := uniq("pw-" + tc.name)
			pool(t, pol, srv.withPermitWebhook(tc.path, time.Second, 30*time.Second, tc.fp))
			node := newNode(uniq(pol+"-node")).label("pool", pol).create(t)
			waitReady(t, pol)
			ns := namespace(t, nil)
			newPod(ns, "a").policy(pol).req(corev1.ResourceCPU, "100m").create(t)
			if tc.bind {
				eventually(t, 15*time.Second, "pod bound", func() (bool, error) {
					return getPod(t, ns, "a").Spec.NodeName == node.Name, nil
				})
				if tc.path == "/wait" {
					if n := srv.count("/wait", "a"); n < 2 {
						t.Errorf("%d calls, want a wait then an approval", n)
					}
				}
				return
			}
			eventually(t, 15*time.Second, "Permitted says "+tc.want, func() (bool, error) {
				return strings.Contains(permittedMessage(t, ns, "a"), tc.want), nil
			})
			if tc.path == "/longreason" {
				c := podCondition(getPod(t, ns, "a"), bindgatev1alpha1.PodConditionPermitted)
				if len(c.Message) > 400 || !strings.HasSuffix(c.Message, "...") {
					t.Errorf("Permitted message of %d bytes, want the reason cut to %d: %q", len(c.Message), permit.MaxReason, c.Message)
				}
				for _, e := range events(t, ns, "a") {
					if len(e) > 1024 {
						t.Errorf("event of %d bytes", len(e))
					}
				}
			}
			if tc.path == "/hang" {
				if m := permittedMessage(t, ns, "a"); !strings.Contains(m, "timed out") {
					t.Errorf("Permitted = %q, want a timeout", m)
				}
			}
			if p := getPod(t, ns, "a"); p.Spec.NodeName != "" {
				t.Errorf("pod bound to %s", p.Spec.NodeName)
			}
		})
	}
}

// TestPermitWebhookDoesNotStallOthers: while pods wait on a hanging
// webhook, a plain policy's pods all bind.
func TestPermitWebhookDoesNotStallOthers(t *testing.T) {
	startManager(t, 2)
	srv := newPermitServer(t)
	slow := uniq("pw-slow")
	pool(t, slow, srv.withPermitWebhook("/hang", 10*time.Second, 30*time.Second, bindgatev1alpha1.FailurePolicyFail))
	newNode(uniq(slow+"-node")).label("pool", slow).create(t)
	plain := uniq("pw-plain")
	pool(t, plain)
	newNode(uniq(plain+"-node")).label("pool", plain).create(t)
	waitReady(t, slow)
	waitReady(t, plain)
	slowNS, plainNS := namespace(t, nil), namespace(t, nil)
	for i := range 10 {
		newPod(slowNS, fmt.Sprintf("s%d", i)).policy(slow).req(corev1.ResourceCPU, "10m").create(t)
	}
	eventually(t, 10*time.Second, "slow pods waiting on the webhook", func() (bool, error) {
		for i := range 10 {
			if !strings.Contains(permittedMessage(t, slowNS, fmt.Sprintf("s%d", i)), permit.ReasonInFlight) {
				return false, nil
			}
		}
		return true, nil
	})
	start := time.Now()
	for i := range 20 {
		newPod(plainNS, fmt.Sprintf("p%d", i)).policy(plain).req(corev1.ResourceCPU, "10m").create(t)
	}
	eventually(t, 8*time.Second, "20 plain pods bound", func() (bool, error) {
		return countBound(t, plainNS) == 20, nil
	})
	t.Logf("20 plain pods bound in %v while 10 pods wait on a hanging webhook", time.Since(start))
	if n := countBound(t, slowNS); n != 0 {
		t.Errorf("%d pods of the hanging webhook bound", n)
	}
}
