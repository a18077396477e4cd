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

// Package webhookclient is the one outbound HTTP client that bindgate uses
// for its permit, bind and postBind webhooks.
//
// Every call is an HTTPS POST, verified against the webhook's CA bundle (or
// the system roots), bounded by the webhook's timeout and by a response size
// cap, optionally signed with the Standard Webhooks scheme, and refused when
// it would reach a link-local or cloud-metadata address (checked on the
// resolved dial address, so DNS names are covered too).
//
// Redirects are never followed: a 3xx answer is returned to the caller as an
// ordinary Response, whatever its Location. This keeps the destination
// checks and the signature bound to the one URL the policy names.
// Environment proxies (HTTPS_PROXY) are not used either, for the same reason.
// When a name resolves to several addresses, forbidden ones are never dialled;
// the remaining ones are tried as usual.
package webhookclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// Kinds of webhook calls, used as the kind metric label and in log lines.
const (
	KindPermit   = "permit"
	KindBind     = "bind"
	KindPostBind = "postBind"
)

// Defaults and content types.
const (
	// DefaultTimeout bounds a call when the webhook sets no timeout.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxResponseBytes caps a response body when Options sets no cap.
	DefaultMaxResponseBytes int64 = 64 << 10
	// ContentTypeJSON is the Content-Type of Client.Do requests.
	ContentTypeJSON = "application/json"
	// ContentTypeCloudEvents is the Content-Type of Client.DoCloudEvent
	// requests (CloudEvents structured mode).
	ContentTypeCloudEvents = "application/cloudevents+json"
)

// maxCachedClients bounds the per-CA-bundle client cache; when it is full
// the cache is emptied (idle connections closed) and refilled on demand.
const maxCachedClients = 64

// userAgent identifies bindgate to webhook servers.
const userAgent = "bindgate-webhook/v1alpha1"

// Options configures a Client.
type Options struct {
	// Destinations says which addresses webhooks may reach; the zero value
	// refuses loopback, unspecified, link-local, metadata, multicast and
	// broadcast addresses.
	Destinations Destinations
	// MaxResponseBytes caps the response body; a bigger body is an error.
	// Zero or negative means DefaultMaxResponseBytes (64 KiB).
	MaxResponseBytes int64
	// SecretNamespace is the only namespace signing secrets are read from:
	// the operator's own.
	SecretNamespace string
}

// SecretGetter reads one key of a Secret. The operator backs it with a
// client restricted to its own namespace; tests use a map.
type SecretGetter interface {
	// GetSecretKey returns the value of key in the Secret namespace/name.
	GetSecretKey(ctx context.Context, namespace, name, key string) ([]byte, error)
}

// Response is a webhook's answer. Any HTTP status is a Response, including
// 3xx (redirects are not followed) and 5xx; the caller decides what it means.
type Response struct {
	// StatusCode is the HTTP status code.
	StatusCode int
	// Body is the whole response body, at most Options.MaxResponseBytes.
	Body []byte
}

// Client calls webhooks. It is safe for concurrent use; create one per
// process and share it.
type Client struct {
	opts    Options
	secrets SecretGetter
	now     func() time.Time
	// resolver overrides name resolution; nil means the system resolver.
	// Tests set it to reach a fake DNS server.
	resolver *net.Resolver

	mu      sync.Mutex
	clients map[string]*http.Client // keyed by sha256 of the CA bundle
}

// New returns a Client. secrets may be nil when no webhook is signed.
func New(opts Options, secrets SecretGetter) *Client {
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return &Client{
		opts:    opts,
		secrets: secrets,
		now:     time.Now,
		clients: map[string]*http.Client{},
	}
}

// Do POSTs payload as application/json to URLOf(wh) and returns the answer.
// kind (KindPermit, KindBind, KindPostBind) and name identify the webhook in
// metrics and logs. msgID is the webhook-id header, required when the
// webhook is signed; reuse it across retries of the same message.
//
// Errors wrap ErrForbiddenDestination when the destination is refused (no
// request is sent) and context.DeadlineExceeded when the call timed out.
func (c *Client) Do(ctx context.Context, kind, name string, wh *bindgatev1alpha1.Webhook, msgID string, payload []byte) (*Response, error) {
	return c.do(ctx, call{kind: kind, name: name, wh: wh, msgID: msgID, contentType: ContentTypeJSON, body: payload})
}

// DoCloudEvent is Do for a structured-mode CloudEvent such as the one built
// by NewPodBoundEvent: it sends Content-Type application/cloudevents+json.
// Pass the event's id as msgID.
func (c *Client) DoCloudEvent(ctx context.Context, kind, name string, wh *bindgatev1alpha1.Webhook, msgID string, event []byte) (*Response, error) {
	return c.do(ctx, call{kind: kind, name: name, wh: wh, msgID: msgID, contentType: ContentTypeCloudEvents, body: event})
}

// call is one outgoing request.
type call struct {
	kind, name  string
	wh          *bindgatev1alpha1.Webhook
	msgID       string
	contentType string
	body        []byte
}

// do validates, signs, sends and records one call.
func (c *Client) do(ctx context.Context, cl call) (*Response, error) {
	if cl.wh == nil {
		return nil, fmt.Errorf("%s webhook %q: no webhook configured", cl.kind, cl.name)
	}
	if err := ValidateURL(URLOf(cl.wh), c.opts.Destinations); err != nil {
		requestsTotal.WithLabelValues(cl.kind, cl.name, codeRefused).Inc()
		return nil, fmt.Errorf("%s webhook %q: %w", cl.kind, cl.name, err)
	}
	req, hc, err := c.prepare(ctx, cl)
	if err != nil {
		requestsTotal.WithLabelValues(cl.kind, cl.name, codeError).Inc()
		return nil, fmt.Errorf("%s webhook %q: %w", cl.kind, cl.name, err)
	}

	timeout := timeoutOf(cl.wh)
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	log := ctrl.LoggerFrom(ctx).WithValues("webhookKind", cl.kind, "webhook", cl.name)
	log.V(4).Info("Calling webhook", "host", req.URL.Host, "path", req.URL.Path,
		"msgID", cl.msgID, "bytes", len(cl.body), "timeout", timeout)

	start := time.Now()
	resp, err := c.send(hc, req.WithContext(callCtx))
	resp, err = answeredInTime(callCtx, resp, err)
	elapsed := time.Since(start)
	requestDuration.WithLabelValues(cl.kind, cl.name).Observe(elapsed.Seconds())
	if err != nil {
		err = classify(callCtx, timeout, err)
		requestsTotal.WithLabelValues(cl.kind, cl.name, errorCode(err)).Inc()
		log.V(4).Info("Webhook call failed", "msgID", cl.msgID, "duration", elapsed, "err", err.Error())
		return nil, fmt.Errorf("%s webhook %q: %w", cl.kind, cl.name, err)
	}
	requestsTotal.WithLabelValues(cl.kind, cl.name, strconv.Itoa(resp.StatusCode)).Inc()
	log.V(4).Info("Webhook answered", "msgID", cl.msgID, "status", resp.StatusCode,
		"bytes", len(resp.Body), "duration", elapsed)
	return resp, nil
}

// prepare builds the request (headers and signature included) and picks the
// HTTP client for the webhook's CA bundle.
func (c *Client) prepare(ctx context.Context, cl call) (*http.Request, *http.Client, error) {
	hc, err := c.httpClient(cl.wh.CABundle)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, URLOf(cl.wh), bytes.NewReader(cl.body))
	if err != nil {
		return nil, nil, fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Content-Type", cl.contentType)
	req.Header.Set("Accept", ContentTypeJSON)
	req.Header.Set("User-Agent", userAgent)
	if err := c.setSignatureHeaders(ctx, req.Header, cl); err != nil {
		return nil, nil, err
	}
	return req, hc, nil
}

// setSignatureHeaders sets the Standard Webhooks headers: webhook-id and
// webhook-timestamp on every call that has a msgID, webhook-signature only
// when the webhook names a signing secret.
func (c *Client) setSignatureHeaders(ctx context.Context, h http.Header, cl call) error {
	ref := cl.wh.SigningSecretRef
	if ref == nil && cl.msgID == "" {
		return nil
	}
	if cl.msgID == "" {
		return errors.New("a signed webhook call needs a message id")
	}
	ts := c.now().Unix()
	h.Set(HeaderWebhookID, cl.msgID)
	h.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	if ref == nil {
		return nil
	}
	key, err := c.signingKey(ctx, ref)
	if err != nil {
		return err
	}
	h.Set(HeaderWebhookSignature, sign(key, cl.msgID, ts, cl.body))
	return nil
}

// signingKey reads the signing secret from the operator's namespace and
// turns it into an HMAC key.
func (c *Client) signingKey(ctx context.Context, ref *bindgatev1alpha1.SecretKeyRef) ([]byte, error) {
	if c.secrets == nil || c.opts.SecretNamespace == "" {
		return nil, fmt.Errorf("signing secret %q: no secret namespace configured", ref.Name)
	}
	secret, err := c.secrets.GetSecretKey(ctx, c.opts.SecretNamespace, ref.Name, ref.Key)
	if err != nil {
		return nil, fmt.Errorf("reading signing secret %s/%s key %q: %w", c.opts.SecretNamespace, ref.Name, ref.Key, err)
	}
	if len(secret) == 0 {
		return nil, fmt.Errorf("signing secret %s/%s key %q is empty", c.opts.SecretNamespace, ref.Name, ref.Key)
	}
	key, err := signingKey(secret)
	if err != nil {
		return nil, fmt.Errorf("signing secret %s/%s key %q: %w", c.opts.SecretNamespace, ref.Name, ref.Key, err)
	}
	return key, nil
}

// send performs the request and reads at most MaxResponseBytes of the body.
func (c *Client) send(hc *http.Client, req *http.Request) (*Response, error) {
	resp, err := hc.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			uerr.URL = redactedURL(uerr.URL) // a query may carry a token
		}
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	limit := c.opts.MaxResponseBytes
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading response body: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("response body exceeds %d bytes", limit)
	}
	return &Response{StatusCode: resp.StatusCode, Body: body}, nil
}

// answeredInTime filters send's results: an answer read once the call's
// context has ended counts as that end (a timeout), not as the webhook's
// answer. net/http hands over a response that raced the context's end —
// such as the one a hanging server writes when it sees the client hang up
// at the deadline — and the call must not read it as a reply.
func answeredInTime(callCtx context.Context, resp *Response, err error) (*Response, error) {
	if err == nil && callCtx.Err() != nil {
		return nil, callCtx.Err()
	}
	return resp, err
}

// classify makes a timeout recognisable with errors.Is(err,
// context.DeadlineExceeded) whatever layer noticed it.
func classify(callCtx context.Context, timeout time.Duration, err error) error {
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s: %w: %w", timeout, context.DeadlineExceeded, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s: %w", timeout, err)
	}
	return err
}

// errorCode is the metric code label for a failed call.
func errorCode(err error) string {
	switch {
	case errors.Is(err, ErrForbiddenDestination):
		return codeRefused
	case errors.Is(err, context.DeadlineExceeded):
		return codeTimeout
	default:
		return codeError
	}
}

// timeoutOf is the webhook's per-call timeout, DefaultTimeout when unset.
func timeoutOf(wh *bindgatev1alpha1.Webhook) time.Duration {
	if wh.Timeout != nil && wh.Timeout.Duration > 0 {
		return wh.Timeout.Duration
	}
	return DefaultTimeout
}

// httpClient returns the cached client for a CA bundle, building it on first
// use. An empty bundle means the system roots.
func (c *Client) httpClient(caBundle []byte) (*http.Client, error) {
	key := "system"
	if len(caBundle) > 0 {
		sum := sha256.Sum256(caBundle)
		key = hex.EncodeToString(sum[:])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if hc, ok := c.clients[key]; ok {
		return hc, nil
	}
	tlsConfig, err := tlsConfigFor(caBundle)
	if err != nil {
		return nil, err
	}
	if len(c.clients) >= maxCachedClients {
		for _, old := range c.clients {
			old.CloseIdleConnections()
		}
		clear(c.clients)
	}
	hc := &http.Client{
		Transport:     c.newTransport(tlsConfig),
		CheckRedirect: noRedirects,
	}
	c.clients[key] = hc
	return hc, nil
}

// noRedirects makes the client return any 3xx answer as is.
func noRedirects(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse
}

// tlsConfigFor verifies servers against caBundle, or the system roots when
// it is empty.
func tlsConfigFor(caBundle []byte) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) == 0 {
		return cfg, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		return nil, errors.New("caBundle contains no valid PEM certificate")
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// newTransport builds a transport whose every dial is checked against the
// forbidden destinations, and which ignores environment proxies.
func (c *Client) newTransport(tlsConfig *tls.Config) *http.Transport {
	dialer := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Resolver:  c.resolver,
		Control:   dialControl(c.opts.Destinations),
	}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        tlsConfig,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// redactedURL is the URL without credentials or query, for messages.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<invalid url>"
	}
	return u.Scheme + "://" + u.Host + u.Path
}
