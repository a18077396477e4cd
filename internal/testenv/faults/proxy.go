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

// Package faults is a fault-injecting reverse proxy for a test
// kube-apiserver: the operator under test talks to the proxy (HTTPS on
// loopback, HTTP/2 like the real server), the test's own checks talk to the
// API server directly. Driven by a seed, the proxy answers a chosen fraction
// of requests with 429 and Retry-After, 500 or 503, 409 on writes, 504 after
// the write was applied, adds latency, cuts watch streams in the middle of
// an event and resets connections, and counts every fault it injected.
package faults

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// Config configures a proxy.
type Config struct {
	// Seed drives every random choice.
	Seed uint64
	// Rules are the faults to inject (see SetRules).
	Rules []Rule
	// MaxLatency bounds the latency Latency adds (default 200ms).
	MaxLatency time.Duration
	// WatchCutMin and WatchCutMax bound how long a watch that WatchCut
	// picked lives (default 1s and 5s).
	WatchCutMin, WatchCutMax time.Duration
	// RetryAfterSeconds is the Retry-After of a 429 (default 1).
	RetryAfterSeconds int
	// TimeoutAfterApplyDelay is how long after the API server applied a
	// write TimeoutAfterApply answers 504 (default 0: at once). A real 504
	// comes after a timeout, when the client's watches have usually shown
	// the write already.
	TimeoutAfterApplyDelay time.Duration
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	cfg      Config
	upstream *url.URL
	server   *http.Server
	listener net.Listener
	caData   []byte
	infos    *request.RequestInfoFactory
	rp       *httputil.ReverseProxy

	mu    sync.Mutex
	rng   *rand.Rand
	rules []Rule

	requests atomic.Int64
	counts   map[Kind]*atomic.Int64
	done     chan struct{}
	wg       sync.WaitGroup
}

// Start starts a proxy on a loopback port in front of the API server that
// upstream reaches; the proxy authenticates to it with upstream's
// credentials, so every client of the proxy acts with them (impersonation
// headers pass through).
func Start(upstream *rest.Config, cfg Config) (*Proxy, error) {
	if cfg.MaxLatency <= 0 {
		cfg.MaxLatency = 200 * time.Millisecond
	}
	if cfg.WatchCutMin <= 0 {
		cfg.WatchCutMin = time.Second
	}
	if cfg.WatchCutMax < cfg.WatchCutMin {
		cfg.WatchCutMax = max(cfg.WatchCutMin, 5*time.Second)
	}
	if cfg.RetryAfterSeconds <= 0 {
		cfg.RetryAfterSeconds = 1
	}
	if err := validate(cfg.Rules); err != nil {
		return nil, err
	}
	target, err := url.Parse(upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("upstream host %q: %w", upstream.Host, err)
	}
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, fmt.Errorf("upstream transport: %w", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"})
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	p := &Proxy{
		cfg:      cfg,
		upstream: target,
		listener: ln,
		caData:   certPEM,
		infos:    &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")},
		rng:      rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		rules:    cfg.Rules,
		counts:   map[Kind]*atomic.Int64{},
		done:     make(chan struct{}),
	}
	for _, k := range Kinds {
		p.counts[k] = &atomic.Int64{}
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
		},
		Transport:     rt,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ModifyResponse: func(resp *http.Response) error {
			if c, ok := resp.Request.Context().Value(cutKey{}).(*watchCut); ok && resp.StatusCode == http.StatusOK {
				resp.Body = &cutBody{ReadCloser: resp.Body, deadline: time.Now().Add(c.after), cut: c}
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			// The API server is down (restarting, frozen): what a client
			// of a load balancer sees.
			writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "proxy: upstream: "+err.Error(), 0)
		},
	}
	cert, err := tlsKeyPair(certPEM, keyPEM)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	p.server = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 30 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		TLSConfig: tlsServerConfig(cert),
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	p.wg.Go(func() { _ = p.server.ServeTLS(ln, "", "") })
	return p, nil
}

// URL is the proxy's https URL.
func (p *Proxy) URL() string { return "https://" + p.listener.Addr().String() }

// Config is a client configuration for the proxy: its CA, no credentials
// of its own (the proxy adds the upstream's).
func (p *Proxy) Config() *rest.Config {
	return &rest.Config{Host: p.URL(), TLSClientConfig: rest.TLSClientConfig{CAData: p.caData}, QPS: 1000, Burst: 2000}
}

// WriteKubeconfig writes a kubeconfig for the proxy into dir and returns
// its path (for an operator run as a separate process).
func (p *Proxy) WriteKubeconfig(dir string) (string, error) {
	path := filepath.Join(dir, "proxy.kubeconfig")
	err := clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"faults": {Server: p.URL(), CertificateAuthorityData: p.caData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"faults": {}},
		Contexts:       map[string]*clientcmdapi.Context{"faults": {Cluster: "faults", AuthInfo: "faults"}},
		CurrentContext: "faults",
	}, path)
	if err != nil {
		return "", fmt.Errorf("writing the proxy kubeconfig: %w", err)
	}
	return path, nil
}

// Close stops the proxy and cuts every open connection.
func (p *Proxy) Close() error {
	close(p.done)
	err := p.server.Close()
	p.wg.Wait()
	return err
}

type connKey struct{}

// ServeHTTP injects the faults the rules pick, else forwards.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	req := p.describe(r)
	picked := p.roll(req)
	switch {
	case picked[Reset]:
		p.counts[Reset].Add(1)
		p.reset(r)
		return
	case picked[Throttle]:
		p.counts[Throttle].Add(1)
		w.Header().Set("Retry-After", fmt.Sprint(p.cfg.RetryAfterSeconds))
		writeStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "faults: injected throttling, please try again later", p.cfg.RetryAfterSeconds)
		return
	case picked[ServerError]:
		p.counts[ServerError].Add(1)
		if p.duration(0, 2) == 0 {
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "faults: injected internal error", 0)
		} else {
			writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "faults: injected unavailability", 0)
		}
		return
	case picked[Conflict]:
		p.counts[Conflict].Add(1)
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict,
			fmt.Sprintf("Operation cannot be fulfilled on %s %q: faults: injected conflict, the object has been modified; please apply your changes to the latest version and try again", req.Resource, req.Name), 0)
		return
	}
	if picked[Latency] {
		p.counts[Latency].Add(1)
		select {
		case <-time.After(p.duration(0, p.cfg.MaxLatency)):
		case <-r.Context().Done():
			return
		case <-p.done:
			return
		}
	}
	if picked[TimeoutAfterApply] {
		rec := &discard{header: http.Header{}}
		p.rp.ServeHTTP(rec, r)
		if rec.code >= 200 && rec.code < 300 {
			if d := p.cfg.TimeoutAfterApplyDelay; d > 0 {
				select {
				case <-time.After(d):
				case <-r.Context().Done():
				case <-p.done:
				}
			}
			p.counts[TimeoutAfterApply].Add(1)
			writeStatus(w, http.StatusGatewayTimeout, metav1.StatusReasonTimeout,
				"faults: injected timeout after the request was applied: the server was unable to return a response in the time allotted, but may still be processing the request", 0)
			return
		}
		// The write failed on its own: pass its answer on.
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.code)
		_, _ = w.Write(rec.body)
		return
	}
	if picked[WatchCut] {
		after := p.duration(p.cfg.WatchCutMin, p.cfg.WatchCutMax)
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		r = r.WithContext(context.WithValue(ctx, cutKey{}, &watchCut{after: after, proxy: p, cancel: cancel}))
	}
	p.rp.ServeHTTP(w, r)
}

// reset closes the request's TCP connection with SO_LINGER 0: the peer
// gets a RST.
func (p *Proxy) reset(r *http.Request) {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn()
	}
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	if c != nil {
		_ = c.Close()
	}
	panic(http.ErrAbortHandler)
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string, retryAfter int) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code),
	}
	if retryAfter > 0 {
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(retryAfter)}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(st)
}

// discard records a forwarded answer that the client will not see.
type discard struct {
	header http.Header
	code   int
	body   []byte
}

func (d *discard) Header() http.Header { return d.header }
func (d *discard) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}
func (d *discard) Write(b []byte) (int, error) {
	if d.code == 0 {
		d.code = http.StatusOK
	}
	d.body = append(d.body, b...)
	return len(b), nil
}

type cutKey struct{}

// watchCut ends one watch stream.
type watchCut struct {
	after  time.Duration
	proxy  *Proxy
	cancel context.CancelFunc
}

// cutBody passes a watch stream through until its time is up, then passes
// half of the next chunk (the middle of an event) and fails; a stream with
// no event for a second after its time is cut between events.
type cutBody struct {
	io.ReadCloser
	deadline time.Time
	cut      *watchCut
	once     sync.Once
	counted  atomic.Bool
	timer    *time.Timer
}

func (b *cutBody) count() {
	if b.counted.CompareAndSwap(false, true) {
		b.cut.proxy.counts[WatchCut].Add(1)
	}
}

func (b *cutBody) Read(buf []byte) (int, error) {
	b.once.Do(func() {
		b.timer = time.AfterFunc(time.Until(b.deadline)+time.Second, func() {
			b.count()
			b.cut.cancel()
			_ = b.ReadCloser.Close()
		})
	})
	if b.counted.Load() {
		return 0, errWatchCut
	}
	n, err := b.ReadCloser.Read(buf)
	if n > 1 && time.Now().After(b.deadline) {
		b.count()
		b.timer.Stop()
		// Half of what arrived, never ending on an event's newline.
		k := n / 2
		if buf[k-1] == '\n' {
			k++
		}
		return k, nil
	}
	if err != nil && b.counted.Load() {
		return n, errWatchCut
	}
	return n, err
}

func (b *cutBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	return b.ReadCloser.Close()
}

var errWatchCut = errors.New("faults: watch stream cut")

func tlsKeyPair(certPEM, keyPEM []byte) (tls.Certificate, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("serving certificate: %w", err)
	}
	return cert, nil
}

// tlsServerConfig serves HTTP/2 and HTTP/1.1, as kube-apiserver does.
func tlsServerConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
}
