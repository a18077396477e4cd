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
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// testCA is a throw-away certificate authority.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// newTestCA creates a self-signed CA.
func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generating CA key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("creating CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parsing CA certificate: %v", err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// leaf issues a serving certificate for hosts (DNS names or IPs).
func (ca *testCA) leaf(t *testing.T, hosts ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generating leaf key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("creating leaf certificate: %v", err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}
}

// startTLSServer starts an HTTPS server that presents cert.
func startTLSServer(t *testing.T, cert tls.Certificate, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // expected handshake failures
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// recorder is the test webhook server's handler: it counts requests, keeps
// the last one, and answers by path.
type recorder struct {
	hits     atomic.Int64
	release  chan struct{} // closed at cleanup to free hanging handlers
	redirect string        // Location for /redirect

	mu          sync.Mutex
	lastHeaders http.Header
	lastBody    []byte
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{release: make(chan struct{})}
	t.Cleanup(func() { close(r.release) })
	return r
}

// last returns the last request's headers and body.
func (rec *recorder) last() (http.Header, []byte) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.lastHeaders, rec.lastBody
}

// ServeHTTP implements the test endpoints:
//
//	/ok             200 {"ok":true}
//	/bytes?n=N      200 with N bytes
//	/status?code=C  status C
//	/hang           never answers (until the client gives up)
//	/redirect       302 to rec.redirect
func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.hits.Add(1)
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.lastHeaders, rec.lastBody = r.Header.Clone(), body
	rec.mu.Unlock()
	switch r.URL.Path {
	case "/ok":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	case "/bytes":
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		_, _ = w.Write([]byte(strings.Repeat("x", n)))
	case "/status":
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		w.WriteHeader(code)
	case "/hang":
		select {
		case <-r.Context().Done():
		case <-rec.release:
		}
		// A hanging server never answers: abort instead of letting net/http
		// send an implicit 200 that a client racing its own deadline could
		// still read.
		panic(http.ErrAbortHandler)
	case "/redirect":
		http.Redirect(w, r, rec.redirect, http.StatusFound)
	default:
		http.NotFound(w, r)
	}
}

// fakeDNS is a UDP DNS server answering A and AAAA queries from a table;
// unknown names get NXDOMAIN.
type fakeDNS struct {
	conn    net.PacketConn
	records map[string][]netip.Addr // lower-case name without trailing dot
}

// newFakeDNS starts the server and returns a resolver that uses only it.
func newFakeDNS(t *testing.T, records map[string][]netip.Addr) *net.Resolver {
	t.Helper()
	var lc net.ListenConfig
	conn, err := lc.ListenPacket(t.Context(), "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening for fake DNS: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	d := &fakeDNS{conn: conn, records: records}
	go d.serve()
	addr := conn.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dialer net.Dialer
			return dialer.DialContext(ctx, "udp", addr)
		},
	}
}

func (d *fakeDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp, ok := d.answer(buf[:n]); ok {
			_, _ = d.conn.WriteTo(resp, from)
		}
	}
}

// answer builds the reply to one query (one question, as Go's resolver sends).
func (d *fakeDNS) answer(q []byte) ([]byte, bool) {
	const headerLen = 12
	if len(q) < headerLen {
		return nil, false
	}
	name, end, ok := parseName(q, headerLen)
	if !ok || end+4 > len(q) {
		return nil, false
	}
	qtype := binary.BigEndian.Uint16(q[end:])
	question := q[headerLen : end+4]

	addrs, known := d.records[strings.ToLower(name)]
	var answers [][]byte
	for _, a := range addrs {
		if (qtype == 1 && a.Is4()) || (qtype == 28 && a.Is6()) {
			answers = append(answers, rr(qtype, a.AsSlice()))
		}
	}
	resp := make([]byte, headerLen, 512)
	copy(resp, q[:2])                                               // id
	flags := uint16(0x8180) | binary.BigEndian.Uint16(q[2:])&0x0100 // QR, RA, copy RD
	if !known {
		flags |= 3 // NXDOMAIN
	}
	binary.BigEndian.PutUint16(resp[2:], flags)
	binary.BigEndian.PutUint16(resp[4:], 1)
	binary.BigEndian.PutUint16(resp[6:], uint16(len(answers)))
	resp = append(resp, question...)
	for _, a := range answers {
		resp = append(resp, a...)
	}
	return resp, true
}

// rr is an answer record pointing back at the question's name.
func rr(qtype uint16, data []byte) []byte {
	b := []byte{0xc0, 12} // pointer to the question name
	b = binary.BigEndian.AppendUint16(b, qtype)
	b = binary.BigEndian.AppendUint16(b, 1) // class IN
	b = binary.BigEndian.AppendUint32(b, 60)
	b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
	return append(b, data...)
}

// parseName reads an uncompressed name starting at off.
func parseName(b []byte, off int) (string, int, bool) {
	var labels []string
	for off < len(b) {
		l := int(b[off])
		off++
		if l == 0 {
			return strings.Join(labels, "."), off, true
		}
		if l > 63 || off+l > len(b) {
			return "", 0, false
		}
		labels = append(labels, string(b[off:off+l]))
		off += l
	}
	return "", 0, false
}

// mapSecrets is a SecretGetter backed by a map keyed "namespace/name/key".
type mapSecrets map[string]string

// GetSecretKey implements SecretGetter.
func (m mapSecrets) GetSecretKey(_ context.Context, namespace, name, key string) ([]byte, error) {
	v, ok := m[namespace+"/"+name+"/"+key]
	if !ok {
		return nil, fmt.Errorf("secret %s/%s has no key %q", namespace, name, key)
	}
	return []byte(v), nil
}

// metricFamily returns the gathered family called name.
func metricFamily(t *testing.T, name string) *dto.MetricFamily {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

// labelsMatch reports whether m carries exactly the wanted label values.
func labelsMatch(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// requestCount is bindgate_webhook_requests_total for the labels.
func requestCount(t *testing.T, kind, webhook, code string) float64 {
	t.Helper()
	f := metricFamily(t, "bindgate_webhook_requests_total")
	for _, m := range f.GetMetric() {
		if labelsMatch(m, map[string]string{"kind": kind, "webhook": webhook, "code": code}) {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// durationCount is the number of observations of
// bindgate_webhook_duration_seconds for the labels.
func durationCount(t *testing.T, kind, webhook string) uint64 {
	t.Helper()
	f := metricFamily(t, "bindgate_webhook_duration_seconds")
	for _, m := range f.GetMetric() {
		if labelsMatch(m, map[string]string{"kind": kind, "webhook": webhook}) {
			return m.GetHistogram().GetSampleCount()
		}
	}
	return 0
}
