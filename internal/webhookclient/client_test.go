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
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

const (
	testSecretNS  = "bindgate-system"
	rawSecret     = "raw-secret-value-0123456789"
	hookHost      = "hook.bindgate.test"
	serviceHost   = "receiver.hooks.svc"
	metadataHost  = "metadata.bindgate.test"
	metadata6Host = "v6metadata.bindgate.test"
)

// whsecSecret is a Standard Webhooks "whsec_" secret.
var whsecSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

// testEnv is one set of servers for one test case.
type testEnv struct {
	ca, otherCA *testCA
	rec         *recorder // shared by srv and plain
	otherRec    *recorder
	srv         *httptest.Server // HTTPS, cert from ca
	plain       *httptest.Server // plain HTTP
	other       *httptest.Server // HTTPS on another port: "another host"
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	e := &testEnv{ca: newTestCA(t, "bindgate test CA"), otherCA: newTestCA(t, "other CA")}
	e.rec, e.otherRec = newRecorder(t), newRecorder(t)
	cert := e.ca.leaf(t, "127.0.0.1", "localhost", hookHost, serviceHost)
	e.srv = startTLSServer(t, cert, e.rec)
	e.other = startTLSServer(t, cert, e.otherRec)
	e.plain = httptest.NewServer(e.rec)
	t.Cleanup(e.plain.Close)
	return e
}

// expand replaces {srv}, {port}, {plain} and {other} in s.
func (e *testEnv) expand(t *testing.T, s string) string {
	t.Helper()
	u, err := url.Parse(e.srv.URL)
	if err != nil {
		t.Fatalf("parsing server url: %v", err)
	}
	return strings.NewReplacer(
		"{srv}", u.Host,
		"{port}", u.Port(),
		"{plain}", strings.TrimPrefix(e.plain.URL, "http://"),
		"{other}", strings.TrimPrefix(e.other.URL, "https://"),
	).Replace(s)
}

// caBundle picks a CA bundle by name.
func (e *testEnv) caBundle(name string) []byte {
	switch name {
	case "good":
		return e.ca.pem
	case "other":
		return e.otherCA.pem
	case "junk":
		return []byte("not a certificate")
	default:
		return nil
	}
}

// logBuffer captures log lines at every verbosity.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) ctx(ctx context.Context) context.Context {
	logger := funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.buf.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
	return ctrl.LoggerInto(ctx, logger)
}

func TestDo(t *testing.T) {
	secrets := mapSecrets{
		testSecretNS + "/hook-secret/raw":   rawSecret,
		testSecretNS + "/hook-secret/whsec": whsecSecret,
		testSecretNS + "/hook-secret/bad":   "whsec_!!!not-base64",
		"other-ns/only-there/key":           rawSecret,
	}
	dns := map[string][]netip.Addr{
		hookHost:      {netip.MustParseAddr("127.0.0.1")},
		serviceHost:   {netip.MustParseAddr("127.0.0.1")},
		metadataHost:  {netip.MustParseAddr("169.254.169.254")},
		metadata6Host: {netip.MustParseAddr("fd00:ec2::254")},
	}

	type want struct {
		status      int
		body        string
		contentType string
		signedWith  string // secret value the signature must verify with
		err         string // substring of the error
		is          error  // errors.Is target
		hits        int64  // requests that reached the test server
		otherHits   int64  // requests that reached the "other host"
		code        string // bindgate_webhook_requests_total code label
		attempted   bool   // a duration was observed
		maxElapsed  time.Duration
	}
	cases := map[string]struct {
		url        string
		ca         string // good, other, junk or "" (system roots)
		timeout    time.Duration
		secretRef  *bindgatev1alpha1.SecretKeyRef
		msgID      string
		cloudEvent bool
		redirect   string // Location for /redirect
		opts       Options
		// refuseLoopback keeps the default destinations; otherwise the
		// test servers' loopback address is allowed, as an operator's
		// --webhook-allowed-cidrs would.
		refuseLoopback bool
		// service, when set, replaces url: the receiver named as a Service
		// (its port set to the test server's).
		service   *bindgatev1alpha1.ServiceReference
		cancelled bool
		want      want
	}{
		"success with CA bundle": {
			url: "https://{srv}/ok", ca: "good",
			want: want{status: 200, body: `{"ok":true}`, contentType: ContentTypeJSON, hits: 1, code: "200", attempted: true},
		},
		"hostname resolving to an allowed loopback address": {
			url: "https://" + hookHost + ":{port}/ok", ca: "good", msgID: "msg-1",
			want: want{status: 200, body: `{"ok":true}`, contentType: ContentTypeJSON, hits: 1, code: "200", attempted: true},
		},
		"service reference": {
			service: &bindgatev1alpha1.ServiceReference{Namespace: "hooks", Name: "receiver", Path: "/ok"}, ca: "good", msgID: "msg-svc",
			want: want{status: 200, body: `{"ok":true}`, contentType: ContentTypeJSON, hits: 1, code: "200", attempted: true},
		},
		"hostname resolving to loopback refused at dial by default": {
			url: "https://" + hookHost + ":{port}/ok", ca: "good", refuseLoopback: true,
			want: want{err: "refusing to call loopback address 127.0.0.1", is: ErrForbiddenDestination, code: "refused", attempted: true},
		},
		"loopback literal refused by default": {
			url: "https://{srv}/ok", ca: "good", refuseLoopback: true,
			want: want{err: "refusing to call loopback address 127.0.0.1", is: ErrForbiddenDestination, code: "refused"},
		},
		"cloud event content type": {
			url: "https://{srv}/ok", ca: "good", msgID: "event-id", cloudEvent: true,
			want: want{status: 200, body: `{"ok":true}`, contentType: ContentTypeCloudEvents, hits: 1, code: "200", attempted: true},
		},
		"non-2xx status is a response, not an error": {
			url: "https://{srv}/status?code=503", ca: "good",
			want: want{status: 503, contentType: ContentTypeJSON, hits: 1, code: "503", attempted: true},
		},
		"wrong CA refused": {
			url: "https://{srv}/ok", ca: "other",
			want: want{err: "certificate signed by unknown authority", code: "error", attempted: true},
		},
		"system roots do not trust a private CA": {
			url:  "https://{srv}/ok",
			want: want{err: "certificate signed by unknown authority", code: "error", attempted: true},
		},
		"junk CA bundle": {
			url: "https://{srv}/ok", ca: "junk",
			want: want{err: "caBundle contains no valid PEM certificate", code: "error"},
		},
		"http refused": {
			url: "http://{plain}/ok", ca: "good",
			want: want{err: `webhook url must use https, got scheme "http"`, is: ErrForbiddenDestination, code: "refused"},
		},
		"metadata IPv4 literal refused": {
			url: "https://169.254.169.254/latest/meta-data/", ca: "good",
			want: want{err: "refusing to call link-local/metadata address 169.254.169.254", is: ErrForbiddenDestination, code: "refused"},
		},
		"IPv6 link-local literal refused": {
			url:  "https://[fe80::1]:8443/hook",
			want: want{err: "refusing to call link-local/metadata address fe80::1", is: ErrForbiddenDestination, code: "refused"},
		},
		"hostname resolving to metadata refused at dial": {
			url: "https://" + metadataHost + ":{port}/ok", ca: "good",
			want: want{err: "refusing to call link-local/metadata address 169.254.169.254", is: ErrForbiddenDestination, code: "refused", attempted: true},
		},
		"hostname resolving to IPv6 metadata refused at dial": {
			url: "https://" + metadata6Host + ":{port}/ok", ca: "good",
			want: want{err: "refusing to call link-local/metadata address fd00:ec2::254", is: ErrForbiddenDestination, code: "refused", attempted: true},
		},
		"body over the default cap": {
			url: "https://{srv}/bytes?n=65537", ca: "good",
			want: want{err: "response body exceeds 65536 bytes", hits: 1, code: "error", attempted: true},
		},
		"body over a custom cap": {
			url: "https://{srv}/bytes?n=1025", ca: "good", opts: Options{MaxResponseBytes: 1024},
			want: want{err: "response body exceeds 1024 bytes", hits: 1, code: "error", attempted: true},
		},
		"body exactly at the cap": {
			url: "https://{srv}/bytes?n=1024", ca: "good", opts: Options{MaxResponseBytes: 1024},
			want: want{status: 200, body: strings.Repeat("x", 1024), contentType: ContentTypeJSON, hits: 1, code: "200", attempted: true},
		},
		"hanging server times out": {
			url: "https://{srv}/hang", ca: "good", timeout: 300 * time.Millisecond,
			want: want{err: "timed out after 300ms", is: context.DeadlineExceeded, hits: 1, code: "timeout", attempted: true,
				maxElapsed: 300*time.Millisecond + time.Second},
		},
		"caller context cancelled": {
			url: "https://{srv}/ok", ca: "good", cancelled: true,
			want: want{is: context.Canceled, code: "error", attempted: true},
		},
		"redirect to another host not followed": {
			url: "https://{srv}/redirect", ca: "good", redirect: "https://{other}/ok",
			want: want{status: 302, contentType: ContentTypeJSON, hits: 1, code: "302", attempted: true},
		},
		"same-host redirect not followed either": {
			url: "https://{srv}/redirect", ca: "good", redirect: "/ok",
			want: want{status: 302, contentType: ContentTypeJSON, hits: 1, code: "302", attempted: true},
		},
		"signed with raw secret": {
			url: "https://{srv}/ok", ca: "good", msgID: "msg-raw",
			secretRef: &bindgatev1alpha1.SecretKeyRef{Name: "hook-secret", Key: "raw"},
			want:      want{status: 200, body: `{"ok":true}`, contentType: ContentTypeJSON, signedWith: rawSecret, hits: 1, code: "200", attempted: true},
		},
		"signed with whsec_ secret": {
			url: "https://{srv}/ok", ca: "good", msgID: "msg-whsec", cloudEvent: true,
			secretRef: &bindgatev1alpha1.SecretKeyRef{Name: "hook-secret", Key: "whsec"},
			want:      want{status: 200, body: `{"ok":true}`, contentType: ContentTypeCloudEvents, signedWith: whsecSecret, hits: 1, code: "200", attempted: true},
		},
		"whsec_ secret that is not base64": {
			url: "https://{srv}/ok", ca: "good", msgID: "msg-bad",
			secretRef: &bindgatev1alpha1.SecretKeyRef{Name: "hook-secret", Key: "bad"},
			want:      want{err: "is not valid base64", code: "error"},
		},
		"secret outside the operator namespace is not read": {
			url: "https://{srv}/ok", ca: "good", msgID: "msg-ns",
			secretRef: &bindgatev1alpha1.SecretKeyRef{Name: "only-there", Key: "key"},
			want:      want{err: `reading signing secret bindgate-system/only-there key "key"`, code: "error"},
		},
		"signing needs a message id": {
			url: "https://{srv}/ok", ca: "good",
			secretRef: &bindgatev1alpha1.SecretKeyRef{Name: "hook-secret", Key: "raw"},
			want:      want{err: "needs a message id", code: "error"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestEnv(t)
			e.rec.redirect = e.expand(t, tc.redirect)
			opts := tc.opts
			opts.SecretNamespace = testSecretNS
			if !tc.refuseLoopback {
				opts.Destinations.AllowCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			}
			c := New(opts, secrets)
			c.resolver = newFakeDNS(t, dns)

			wh := &bindgatev1alpha1.Webhook{
				URL:              e.expand(t, tc.url),
				CABundle:         e.caBundle(tc.ca),
				SigningSecretRef: tc.secretRef,
			}
			if tc.service != nil {
				svc := *tc.service
				port, err := strconv.Atoi(e.expand(t, "{port}"))
				if err != nil {
					t.Fatal(err)
				}
				svc.Port = new(int32(port))
				wh.URL, wh.Service = "", &svc
			}
			if tc.timeout > 0 {
				wh.Timeout = &metav1.Duration{Duration: tc.timeout}
			}
			logs := &logBuffer{}
			ctx := logs.ctx(t.Context())
			if tc.cancelled {
				cctx, cancel := context.WithCancel(ctx)
				cancel()
				ctx = cctx
			}
			payload := []byte(`{"hello":"webhook"}`)
			kind := KindPermit
			do := c.Do
			if tc.cloudEvent {
				kind, do = KindPostBind, c.DoCloudEvent
			}

			// The registry is global: compare deltas so -count=N works.
			countBefore := requestCount(t, kind, name, tc.want.code)
			obsBefore := durationCount(t, kind, name)
			start := time.Now()
			resp, err := do(ctx, kind, name, wh, tc.msgID, payload)
			elapsed := time.Since(start)

			checkResult(t, resp, err, tc.want.status, tc.want.body, tc.want.err, tc.want.is)
			if tc.want.maxElapsed > 0 && elapsed > tc.want.maxElapsed {
				t.Errorf("call took %s, want at most %s", elapsed, tc.want.maxElapsed)
			}
			if got := e.rec.hits.Load(); got != tc.want.hits {
				t.Errorf("server hits = %d, want %d", got, tc.want.hits)
			}
			if got := e.otherRec.hits.Load(); got != tc.want.otherHits {
				t.Errorf("other host hits = %d, want %d", got, tc.want.otherHits)
			}
			if got := requestCount(t, kind, name, tc.want.code) - countBefore; got != 1 {
				t.Errorf("requests_total{code=%q} grew by %v, want 1", tc.want.code, got)
			}
			wantObs := uint64(0)
			if tc.want.attempted {
				wantObs = 1
			}
			if got := durationCount(t, kind, name) - obsBefore; got != wantObs {
				t.Errorf("new duration observations = %d, want %d", got, wantObs)
			}
			headers, body := e.rec.last()
			if tc.want.hits > 0 {
				checkRequest(t, headers, body, payload, tc.msgID, tc.want.contentType, tc.want.signedWith)
			}
			checkLogs(t, logs.String(), headers, tc.want.attempted)
		})
	}
}

// checkResult compares Do's result with the expectation.
func checkResult(t *testing.T, resp *Response, err error, status int, body, wantErr string, is error) {
	t.Helper()
	if wantErr != "" || is != nil {
		if err == nil {
			t.Fatalf("Do succeeded with status %d, want error %q", resp.StatusCode, wantErr)
		}
		t.Logf("error: %v", err)
		if !strings.Contains(err.Error(), wantErr) {
			t.Errorf("error = %q, want it to contain %q", err, wantErr)
		}
		if is != nil && !errors.Is(err, is) {
			t.Errorf("errors.Is(%q, %v) = false", err, is)
		}
		if resp != nil {
			t.Errorf("response = %+v, want nil on error", resp)
		}
		return
	}
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if diff := cmp.Diff(&Response{StatusCode: status, Body: []byte(body)}, resp,
		cmp.Transformer("string", func(b []byte) string { return string(b) })); diff != "" {
		t.Errorf("response mismatch (-want +got):\n%s", diff)
	}
}

// checkRequest checks what the server received.
func checkRequest(t *testing.T, headers http.Header, body, payload []byte, msgID, contentType, secret string) {
	t.Helper()
	h := headers
	if contentType != "" {
		if got := h.Get("Content-Type"); got != contentType {
			t.Errorf("Content-Type = %q, want %q", got, contentType)
		}
	}
	if diff := cmp.Diff(string(payload), string(body)); diff != "" {
		t.Errorf("body mismatch (-want +got):\n%s", diff)
	}
	if got := h.Get(HeaderWebhookID); got != msgID {
		t.Errorf("%s = %q, want %q", HeaderWebhookID, got, msgID)
	}
	if secret == "" {
		if got := h.Get(HeaderWebhookSignature); got != "" {
			t.Errorf("unsigned webhook got %s %q", HeaderWebhookSignature, got)
		}
		return
	}
	if err := Verify([]byte(secret), h, body, time.Minute); err != nil {
		t.Errorf("Verify: %v", err)
	}
	tampered := append(bytes.Clone(body), ' ')
	if err := Verify([]byte(secret), h, tampered, time.Minute); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("Verify(tampered body) = %v, want ErrInvalidSignature", err)
	}
}

// checkLogs makes sure requests are logged and that no secret or signature
// reached the logs.
func checkLogs(t *testing.T, logs string, headers http.Header, attempted bool) {
	t.Helper()
	if attempted && !strings.Contains(logs, `"msg"="Calling webhook"`) {
		t.Errorf("no V(4) request log line in:\n%s", logs)
	}
	secretsAndSigs := []string{rawSecret, whsecSecret, strings.TrimPrefix(whsecSecret, "whsec_")}
	if sig := headers.Get(HeaderWebhookSignature); sig != "" {
		secretsAndSigs = append(secretsAndSigs, sig, strings.TrimPrefix(sig, "v1,"))
	}
	for _, s := range secretsAndSigs {
		if strings.Contains(logs, s) {
			t.Errorf("logs contain a secret or signature %q:\n%s", s, logs)
		}
	}
}

func TestClientCachesOneHTTPClientPerCABundle(t *testing.T) {
	caA, caB := newTestCA(t, "a"), newTestCA(t, "b")
	c := New(Options{}, nil)
	bundles := [][]byte{caA.pem, nil, bytes.Clone(caA.pem), caB.pem, nil, caB.pem}
	seen := map[string]bool{}
	for _, b := range bundles {
		hc, err := c.httpClient(b)
		if err != nil {
			t.Fatalf("httpClient: %v", err)
		}
		seen[fmt.Sprintf("%p", hc)] = true
	}
	if got, want := len(seen), 3; got != want {
		t.Errorf("distinct *http.Client = %d, want %d", got, want)
	}
	if got, want := len(c.clients), 3; got != want {
		t.Errorf("cached clients = %d, want %d", got, want)
	}
}

// TestAnsweredInTime: an answer read after the call's context ended is
// that end, not a reply; errors and answers within the deadline pass as
// they are.
func TestAnsweredInTime(t *testing.T) {
	live := context.Background()
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	stopped, stop := context.WithCancel(context.Background())
	stop()
	answer := &Response{StatusCode: http.StatusOK}
	sendErr := errors.New("connection refused")
	cases := map[string]struct {
		ctx      context.Context
		resp     *Response
		err      error
		wantResp *Response
		wantErr  error
	}{
		"answer in time":                {ctx: live, resp: answer, wantResp: answer},
		"answer after the deadline":     {ctx: expired, resp: answer, wantErr: context.DeadlineExceeded},
		"answer after the caller ended": {ctx: stopped, resp: answer, wantErr: context.Canceled},
		"error in time":                 {ctx: live, err: sendErr, wantErr: sendErr},
		"error after the deadline":      {ctx: expired, err: sendErr, wantErr: sendErr},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, err := answeredInTime(tc.ctx, tc.resp, tc.err)
			if resp != tc.wantResp || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("got (%v, %v), want (%v, %v)", resp, err, tc.wantResp, tc.wantErr)
			}
		})
	}
}
