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
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks (https://www.standardwebhooks.com) header names.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// DefaultTolerance is the timestamp tolerance Verify uses when given zero.
const DefaultTolerance = 5 * time.Minute

// secretPrefix marks a base64-encoded Standard Webhooks secret.
const secretPrefix = "whsec_"

// signatureVersion is the only signature scheme emitted and accepted.
const signatureVersion = "v1"

// ErrInvalidSignature is wrapped by Verify when no signature matches.
var ErrInvalidSignature = errors.New("no matching webhook signature")

// signingKey returns the HMAC key for a secret value: the base64 decoding of
// the part after "whsec_" when the value has that prefix, else the raw bytes.
func signingKey(secret []byte) ([]byte, error) {
	s := string(secret)
	if !strings.HasPrefix(s, secretPrefix) {
		return secret, nil
	}
	enc := strings.TrimPrefix(s, secretPrefix)
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(enc)
	}
	if err != nil {
		return nil, fmt.Errorf("signing secret has the %s prefix but is not valid base64: %w", secretPrefix, err)
	}
	return key, nil
}

// sign computes the v1 signature with an already decoded key.
func sign(key []byte, msgID string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID + "." + strconv.FormatInt(ts, 10) + "."))
	mac.Write(body)
	return signatureVersion + "," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Sign returns the Standard Webhooks signature header value,
// "v1," + base64(HMAC-SHA256(key, msgID + "." + unixSeconds(ts) + "." + body)).
// secret is the secret value as stored: when it starts with "whsec_" the key
// is the base64 decoding of the rest, otherwise the raw bytes. A "whsec_"
// value that is not valid base64 is used raw; Client.Do refuses such secrets
// before signing.
func Sign(secret []byte, msgID string, ts time.Time, body []byte) string {
	key, err := signingKey(secret)
	if err != nil {
		key = secret
	}
	return sign(key, msgID, ts.Unix(), body)
}

// Verify checks the Standard Webhooks headers of a received request against
// body: the timestamp must be within tolerance of now (DefaultTolerance when
// tolerance is zero or negative) and one of the space-separated v1 signatures
// must match. secret is interpreted as in Sign.
func Verify(secret []byte, headers http.Header, body []byte, tolerance time.Duration) error {
	key, err := signingKey(secret)
	if err != nil {
		return err
	}
	msgID := headers.Get(HeaderWebhookID)
	tsRaw := headers.Get(HeaderWebhookTimestamp)
	sigs := headers.Get(HeaderWebhookSignature)
	if msgID == "" || tsRaw == "" || sigs == "" {
		return fmt.Errorf("missing %s, %s or %s header", HeaderWebhookID, HeaderWebhookTimestamp, HeaderWebhookSignature)
	}
	ts, err := strconv.ParseInt(tsRaw, 10, 64)
	if err != nil {
		return fmt.Errorf("invalid %s header: %w", HeaderWebhookTimestamp, err)
	}
	if err := checkTimestamp(ts, tolerance); err != nil {
		return err
	}
	want := []byte(sign(key, msgID, ts, body))
	for _, got := range strings.Fields(sigs) {
		if hmac.Equal([]byte(got), want) {
			return nil
		}
	}
	return ErrInvalidSignature
}

// checkTimestamp refuses timestamps too far in the past or the future.
func checkTimestamp(ts int64, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	skew := time.Since(time.Unix(ts, 0))
	if skew > tolerance || skew < -tolerance {
		return fmt.Errorf("webhook timestamp %d is outside the tolerance of %s", ts, tolerance)
	}
	return nil
}
