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

package faults_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/bindgate/bindgate/internal/testenv"
	"github.com/bindgate/bindgate/internal/testenv/faults"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// uniq names an object apart from every other of the test process.
var uniq = testenv.Uniq

func start(t *testing.T, rules ...faults.Rule) (*faults.Proxy, kubernetes.Interface) {
	t.Helper()
	p, err := faults.Start(env.Config, faults.Config{Seed: 1, Rules: rules, WatchCutMin: 300 * time.Millisecond, WatchCutMax: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	cfg := p.Config()
	cfg.RateLimiter = nil
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, cs
}

// raw sends one request through the proxy without client-go's retries.
func raw(t *testing.T, p *faults.Proxy, method, path string) (int, http.Header, []byte) {
	t.Helper()
	hc, err := rest.HTTPClientFor(p.Config())
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, p.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault}, Data: map[string]string{"k": "v"}}
}

func only(k faults.Kind, n int64) map[faults.Kind]int64 {
	out := map[faults.Kind]int64{}
	for _, kind := range faults.Kinds {
		out[kind] = 0
	}
	out[k] = n
	return out
}

func TestPassThrough(t *testing.T) {
	p, cs := start(t)
	name := uniq("pass")
	if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(t.Context(), configMap(name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Clientset.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(t.Context(), name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the write through the proxy is not on the API server: %v", err)
	}
	if p.Injected() != 0 || p.Requests() == 0 {
		t.Errorf("requests %d, injected %d; want some requests and no faults", p.Requests(), p.Injected())
	}
}

func TestThrottle(t *testing.T) {
	p, _ := start(t, faults.Rule{Kind: faults.Throttle, Rate: 1})
	code, header, body := raw(t, p, http.MethodGet, "/api/v1/namespaces/default/configmaps")
	if code != http.StatusTooManyRequests || header.Get("Retry-After") != "1" {
		t.Fatalf("status %d, Retry-After %q; want 429 with Retry-After 1", code, header.Get("Retry-After"))
	}
	if !bytes.Contains(body, []byte(`"reason":"TooManyRequests"`)) {
		t.Errorf("body is not a TooManyRequests Status: %s", body)
	}
	if diff := cmp.Diff(only(faults.Throttle, 1), p.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

func TestServerError(t *testing.T) {
	p, cs := start(t, faults.Rule{Kind: faults.ServerError, Rate: 1})
	for range 6 {
		_, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{})
		if !apierrors.IsInternalError(err) && !apierrors.IsServiceUnavailable(err) {
			t.Fatalf("list: %v, want an internal error or service unavailable", err)
		}
	}
	if got := p.Counts()[faults.ServerError]; got != 6 {
		t.Errorf("%d server errors counted, want 6", got)
	}
}

// TestConflictOnWritesOnly: a 409 is never applied, and reads are not
// touched.
func TestConflictOnWritesOnly(t *testing.T) {
	p, cs := start(t, faults.Rule{Kind: faults.Conflict, Rate: 1})
	name := uniq("conflict")
	_, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(t.Context(), configMap(name), metav1.CreateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("create: %v, want a conflict", err)
	}
	if _, err := env.Clientset.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused write reached the API server: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatalf("a read got a fault meant for writes: %v", err)
	}
	if diff := cmp.Diff(only(faults.Conflict, 1), p.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestTimeoutAfterApply: the client sees 504, the write is on the API
// server; a write that fails on its own passes its own error on.
func TestTimeoutAfterApply(t *testing.T) {
	p, cs := start(t, faults.Rule{Kind: faults.TimeoutAfterApply, Rate: 1})
	name := uniq("applied")
	_, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(t.Context(), configMap(name), metav1.CreateOptions{})
	if !apierrors.IsTimeout(err) {
		t.Fatalf("create: %v, want a timeout", err)
	}
	if _, err := env.Clientset.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(t.Context(), name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the write was not applied: %v", err)
	}
	_, err = cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(t.Context(), configMap(name), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists passed on", err)
	}
	if diff := cmp.Diff(only(faults.TimeoutAfterApply, 1), p.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestTimeoutAfterApplyDelay: with a delay, the 504 comes that long after
// the write was applied, and a watch has shown the write before it, as
// after a real timeout.
func TestTimeoutAfterApplyDelay(t *testing.T) {
	const delay = 500 * time.Millisecond
	p, err := faults.Start(env.Config, faults.Config{Seed: 1, TimeoutAfterApplyDelay: delay,
		Rules: []faults.Rule{{Kind: faults.TimeoutAfterApply, Rate: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	cs, err := kubernetes.NewForConfig(p.Config())
	if err != nil {
		t.Fatal(err)
	}
	name := uniq("applied-late")
	w, err := env.Clientset.CoreV1().ConfigMaps(metav1.NamespaceDefault).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var seen atomic.Bool
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added {
				seen.Store(true)
			}
		}
	}()
	start := time.Now()
	_, err = cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(t.Context(), configMap(name), metav1.CreateOptions{})
	if !apierrors.IsTimeout(err) {
		t.Fatalf("create: %v, want a timeout", err)
	}
	if took := time.Since(start); took < delay {
		t.Errorf("504 after %v, want at least %v", took, delay)
	}
	if !seen.Load() {
		t.Errorf("the watch had not shown the write when the 504 came")
	}
}

func TestLatency(t *testing.T) {
	p, cs := start(t, faults.Rule{Kind: faults.Latency, Rate: 1})
	for range 5 {
		if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(only(faults.Latency, 5), p.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestWatchCutMidEvent: a watch stream with events flowing ends within
// its cut time, and the last bytes the client got are half an event.
func TestWatchCutMidEvent(t *testing.T) {
	p, _ := start(t, faults.Rule{Kind: faults.WatchCut, Rate: 1})
	ns := uniq("watch")
	if _, err := env.Clientset.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			_, _ = env.Clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: ns},
				Data: map[string]string{"payload": strings.Repeat("x", 4096)}}, metav1.CreateOptions{})
		}
	}()
	hc, err := rest.HTTPClientFor(p.Config())
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/api/v1/namespaces/"+ns+"/configmaps?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	got, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatal("the watch stream ended cleanly, want it cut")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the stream was cut after %v, want within its 300-400ms (+1s idle grace)", took)
	}
	if len(got) == 0 || got[len(got)-1] == '\n' {
		t.Errorf("the stream was cut between events (%d bytes, ends with a newline), want in the middle of one", len(got))
	}
	if diff := cmp.Diff(only(faults.WatchCut, 1), p.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestWatchCutIdle: a watch with no events is cut as well.
func TestWatchCutIdle(t *testing.T) {
	p, cs := start(t, faults.Rule{Kind: faults.WatchCut, Rate: 1})
	w, err := cs.CoreV1().ConfigMaps(uniq("idle")).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	timeout := time.After(5 * time.Second)
	for open := true; open; {
		select {
		case ev, ok := <-w.ResultChan():
			// A cut stream ends the watch, or reports an error first.
			if ok && ev.Type != watch.Error {
				t.Fatalf("a %s event on an idle namespace", ev.Type)
			}
			open = ok
		case <-timeout:
			t.Fatal("the idle watch was not cut")
		}
	}
	if got := p.Counts()[faults.WatchCut]; got != 1 {
		t.Errorf("%d watch cuts counted, want 1", got)
	}
}

func TestReset(t *testing.T) {
	p, _ := start(t, faults.Rule{Kind: faults.Reset, Rate: 1})
	hc, err := rest.HTTPClientFor(p.Config())
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, p.URL()+"/api/v1/namespaces", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err == nil {
		_ = resp.Body.Close()
		t.Fatalf("got status %d, want the connection reset", resp.StatusCode)
	}
	if got := p.Counts()[faults.Reset]; got != 1 {
		t.Errorf("%d resets counted, want 1", got)
	}
}

// TestMatch: a rule applies only to the requests it matches (here pod
// bindings), and can be switched off.
func TestMatch(t *testing.T) {
	bindings := func(r faults.Request) bool { return r.Resource == "pods" && r.Subresource == "binding" }
	p, cs := start(t, faults.Rule{Kind: faults.Conflict, Rate: 1, Match: bindings})
	ns := metav1.NamespaceDefault
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uniq("match"), Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod create got a fault meant for bindings: %v", err)
	}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := cs.CoreV1().Pods(ns).Bind(t.Context(), binding, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("bind: %v, want the injected conflict", err)
	}
	if err := p.SetRules(nil); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods(ns).Bind(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind with no rules: %v", err)
	}
	if diff := cmp.Diff(only(faults.Conflict, 1), p.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestSeeded: the same seed makes the same choices for the same requests.
func TestSeeded(t *testing.T) {
	run := func(seed uint64) []int {
		p, err := faults.Start(env.Config, faults.Config{Seed: seed, Rules: []faults.Rule{{Kind: faults.ServerError, Rate: 0.5}}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Close() }()
		var codes []int
		for range 20 {
			code, _, _ := raw(t, p, http.MethodGet, "/api/v1/namespaces/default")
			codes = append(codes, code/100)
		}
		return codes
	}
	a, b := run(7), run(7)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("seed 7 twice gave different faults (-first +second):\n%s", diff)
	}
	if c := run(8); cmp.Equal(a, c) {
		t.Errorf("seeds 7 and 8 made the same 20 choices: %v", a)
	}
}

func TestInvalidRules(t *testing.T) {
	for name, tc := range map[string]struct {
		rules []faults.Rule
		want  string
	}{
		"rate above 1":  {rules: []faults.Rule{{Kind: faults.Latency, Rate: 1.5}}, want: "rules[0].rate"},
		"negative rate": {rules: []faults.Rule{{Kind: faults.Reset}, {Kind: faults.Reset, Rate: -0.1}}, want: "rules[1].rate"},
		"unknown kind":  {rules: []faults.Rule{{Kind: "teapot", Rate: 0.1}}, want: `rules[0].kind: unknown fault "teapot"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := faults.Start(env.Config, faults.Config{Rules: tc.rules})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestAcrossAPIServerRestartAndFreeze: clients of the proxy and of the API
// server keep working after kube-apiserver is restarted (same certificates,
// same etcd), and after it was frozen (SIGSTOP) and thawed (SIGCONT).
func TestAcrossAPIServerRestartAndFreeze(t *testing.T) {
	own, err := testenv.Start(testenv.WithRestartableAPIServer())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop() })
	p, err := faults.Start(own.Config, faults.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	cs, err := kubernetes.NewForConfig(p.Config())
	if err != nil {
		t.Fatal(err)
	}
	before := uniq("before")
	if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(t.Context(), configMap(before), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := own.RestartAPIServer(); err != nil {
		t.Fatal(err)
	}
	for who, c := range map[string]kubernetes.Interface{"proxy": cs, "direct": own.Clientset} {
		if _, err := c.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(t.Context(), before, metav1.GetOptions{}); err != nil {
			t.Fatalf("%s client after the restart: %v", who, err)
		}
	}

	if err := own.SignalAPIServer(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	_, err = cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, before, metav1.GetOptions{})
	cancel()
	if err == nil {
		t.Error("a frozen API server answered")
	}
	if err := own.SignalAPIServer(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(t.Context(), before, metav1.GetOptions{}); err != nil {
		t.Fatalf("after SIGCONT: %v", err)
	}
	if err := env.SignalAPIServer(syscall.SIGCONT); err == nil {
		t.Error("signalled an API server not started WithRestartableAPIServer")
	}
}
