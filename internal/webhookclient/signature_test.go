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
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The published Standard Webhooks test vector.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignMatchesStandardWebhooksVector(t *testing.T) {
	got := Sign([]byte(vectorSecret), vectorMsgID, time.Unix(vectorTimestamp, 0), []byte(vectorBody))
	if got != vectorSignature {
		t.Errorf("Sign = %q, want %q", got, vectorSignature)
	}
}

func TestVerify(t *testing.T) {
	now := time.Now()
	body := []byte(`{"pod":"default/web-0"}`)
	headers := func(secret, msgID string, ts time.Time, signed []byte) http.Header {
		h := http.Header{}
		h.Set(HeaderWebhookID, msgID)
		h.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
		h.Set(HeaderWebhookSignature, Sign([]byte(secret), msgID, ts, signed))
		return h
	}
	cases := map[string]struct {
		secret    string
		headers   http.Header
		body      []byte
		tolerance time.Duration
		wantErr   string // "" means valid
		wantIs    error
	}{
		"raw secret": {
			secret: rawSecret, headers: headers(rawSecret, "m1", now, body), body: body,
		},
		"whsec_ secret": {
			secret: whsecSecret, headers: headers(whsecSecret, "m1", now, body), body: body,
		},
		"whsec_ key is the decoded bytes, not the string": {
			secret: whsecSecret, headers: headers(strings.TrimPrefix(whsecSecret, "whsec_"), "m1", now, body), body: body,
			wantErr: "no matching webhook signature", wantIs: ErrInvalidSignature,
		},
		"body tampered": {
			secret: rawSecret, headers: headers(rawSecret, "m1", now, body), body: []byte(`{"pod":"default/web-1"}`),
			wantErr: "no matching webhook signature", wantIs: ErrInvalidSignature,
		},
		"message id tampered": {
			secret: rawSecret, headers: func() http.Header {
				h := headers(rawSecret, "m1", now, body)
				h.Set(HeaderWebhookID, "m2")
				return h
			}(), body: body,
			wantIs: ErrInvalidSignature,
		},
		"wrong secret": {
			secret: "another-secret", headers: headers(rawSecret, "m1", now, body), body: body,
			wantIs: ErrInvalidSignature,
		},
		"one of several signatures matches": {
			secret: rawSecret, headers: func() http.Header {
				h := headers(rawSecret, "m1", now, body)
				h.Set(HeaderWebhookSignature, "v1,bm9wZQ== "+h.Get(HeaderWebhookSignature))
				return h
			}(), body: body,
		},
		"timestamp too old": {
			secret: rawSecret, headers: headers(rawSecret, "m1", now.Add(-10*time.Minute), body), body: body,
			wantErr: "outside the tolerance of 5m0s",
		},
		"timestamp too far in the future": {
			secret: rawSecret, headers: headers(rawSecret, "m1", now.Add(time.Hour), body), body: body,
			tolerance: time.Minute, wantErr: "outside the tolerance of 1m0s",
		},
		"missing signature header": {
			secret: rawSecret, headers: func() http.Header {
				h := headers(rawSecret, "m1", now, body)
				h.Del(HeaderWebhookSignature)
				return h
			}(), body: body,
			wantErr: "missing webhook-id, webhook-timestamp or webhook-signature header",
		},
		"timestamp not a number": {
			secret: rawSecret, headers: func() http.Header {
				h := headers(rawSecret, "m1", now, body)
				h.Set(HeaderWebhookTimestamp, "yesterday")
				return h
			}(), body: body,
			wantErr: "invalid webhook-timestamp header",
		},
		"whsec_ secret that is not base64": {
			secret: "whsec_***", headers: headers(rawSecret, "m1", now, body), body: body,
			wantErr: "not valid base64",
		},
		"published test vector": {
			secret: vectorSecret, body: []byte(vectorBody), tolerance: time.Since(time.Unix(vectorTimestamp, 0)) + time.Hour,
			headers: http.Header{
				"Webhook-Id":        {vectorMsgID},
				"Webhook-Timestamp": {strconv.Itoa(vectorTimestamp)},
				"Webhook-Signature": {vectorSignature},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Verify([]byte(tc.secret), tc.headers, tc.body, tc.tolerance)
			switch {
			case tc.wantErr == "" && tc.wantIs == nil:
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
			case err == nil:
				t.Fatalf("Verify succeeded, want error %q", tc.wantErr)
			default:
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error = %q, want it to contain %q", err, tc.wantErr)
				}
				if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
					t.Errorf("errors.Is(%q, %v) = false", err, tc.wantIs)
				}
			}
		})
	}
}
