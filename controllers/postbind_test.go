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
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/controllers"
	"github.com/bindgate/bindgate/internal/bindhook"
	"github.com/bindgate/bindgate/internal/postbind"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

const hookSecret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// hookEnv is one BindHook/PostBindHook test's operator namespace (with the signing secret) and
// manager options.
type hookEnv struct {
	ns   string // operator namespace
	opts controllers.Options
}

func newHookEnv(t *testing.T) *hookEnv {
	t.Helper()
	ns := namespace(t, nil)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook-secret"},
		Data:       map[string][]byte{"key": []byte(hookSecret)},
	}
	if err := env.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	w := &hookEnv{ns: ns}
	w.opts.Workers = 16
	w.opts.Namespace = ns
	w.opts.WebhookBaseBackoff = 50 * time.Millisecond
	return w
}

// start runs a manager with the env's options until stop (or the test end).
func (w *hookEnv) start(t *testing.T) (stop func()) {
	t.Helper()
	return startManager(t, w.opts.Workers, func(o *controllers.Options) { *o = w.opts })
}

// receiver is an HTTPS test receiver of PostBind notices. It verifies the
// Standard Webhooks signature of every request.
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	// failFirst answers 503 to the first failFirst attempts of each id.
	failFirst int
	// down answers 503 to everything.
	down atomic.Bool
	// hang blocks every request until release is closed or the client gives up.
	hang    bool
	block   chan struct{} // when non-nil, requests wait until it is closed
	release chan struct{}

	requests atomic.Int64
	invalid  atomic.Int64
	mu       sync.Mutex
	attempts map[string]int                         // per event id
	events   map[string]webhookclient.PodBoundEvent // verified, by id
}

func newReceiver(t *testing.T, configure func(*receiver)) *receiver {
	t.Helper()
	r := &receiver{t: t, release: make(chan struct{}), attempts: map[string]int{}, events: map[string]webhookclient.PodBoundEvent{}}
	if configure != nil {
		configure(r)
	}
	r.srv = httptest.NewTLSServer(r)
	t.Cleanup(func() {
		close(r.release)
		if r.block != nil {
			select {
			case <-r.block:
			default:
				close(r.block)
			}
		}
		r.srv.Close()
	})
	return r
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	if r.hang {
		select {
		case <-r.release:
		case <-req.Context().Done():
		}
		return
	}
	if r.block != nil {
		<-r.block
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if err := webhookclient.Verify([]byte(hookSecret), req.Header, body, 0); err != nil {
		r.invalid.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev webhookclient.PodBoundEvent
	if err := json.Unmarshal(body, &ev); err != nil || ev.SpecVersion != "1.0" || ev.Type != webhookclient.EventTypePodBound ||
		ev.ID != req.Header.Get(webhookclient.HeaderWebhookID) || req.Header.Get("Content-Type") != webhookclient.ContentTypeCloudEvents {
		r.invalid.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.attempts[ev.ID]++
	n := r.attempts[ev.ID]
	r.mu.Unlock()
	if r.down.Load() || n <= r.failFirst {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	r.mu.Lock()
	r.events[ev.ID] = ev
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) caBundle() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
}

func (r *receiver) hook(name string, maxAttempts int32) bindgatev1alpha1.PostBindWebhook {
	return bindgatev1alpha1.PostBindWebhook{
		Name: name, MaxAttempts: maxAttempts,
		Webhook: bindgatev1alpha1.Webhook{
			URL: r.srv.URL + "/" + name, CABundle: r.caBundle(),
			Timeout:          &metav1.Duration{Duration: time.Second},
			SigningSecretRef: &bindgatev1alpha1.SecretKeyRef{Name: "hook-secret", Key: "key"},
		},
	}
}

func (r *receiver) delivered() map[string]webhookclient.PodBoundEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]webhookclient.PodBoundEvent, len(r.events))
	for k, v := range r.events {
		out[k] = v
	}
	return out
}

func (r *receiver) attemptsOf(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts[id]
}

// bigNode makes a node of the pool that takes many pods.
func bigNode(t *testing.T, pool string) {
	t.Helper()
	newNode(uniq("node")).label("pool", pool).alloc(corev1.ResourcePods, "1000").
		alloc(corev1.ResourceCPU, "1000").create(t)
}

func createPods(t *testing.T, ns, policy string, n int) []*corev1.Pod {
	t.Helper()
	out := make([]*corev1.Pod, 0, n)
	for i := range n {
		out = append(out, newPod(ns, fmt.Sprintf("p-%d", i)).policy(policy).req(corev1.ResourceCPU, "10m").create(t))
	}
	return out
}

// waitResults waits until every pod records an outcome for hook and returns
// the outcomes by pod name.
func waitResults(t *testing.T, ns, hook string, n int, timeout time.Duration) map[string]string {
	t.Helper()
	out := map[string]string{}
	eventually(t, timeout, fmt.Sprintf("%d PostBind outcomes of %s", n, hook), func() (bool, error) {
		clear(out)
		for _, p := range listPods(t, ns) {
			if v, ok := p.Annotations[postbind.ResultAnnotation(hook)]; ok {
				out[p.Name] = v
			}
		}
		return len(out) == n, nil
	})
	return out
}

func TestPostBindDeliversVerifiedCloudEvents(t *testing.T) {
	w := newHookEnv(t)
	rec := newReceiver(t, nil)
	name := uniq("pb-audit")
	bigNode(t, name)
	pool(t, name, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.PostBind = []bindgatev1alpha1.PostBindWebhook{rec.hook("audit", 5)}
	})
	w.start(t)
	ns := namespace(t, nil)
	pods := createPods(t, ns, name, 100)

	results := waitResults(t, ns, "audit", 100, 40*time.Second)
	for pod, v := range results {
		if v != postbind.ResultDelivered {
			t.Errorf("pod %s: outcome %q, want delivered", pod, v)
		}
	}
	if n := rec.invalid.Load(); n != 0 {
		t.Errorf("%d requests failed signature or CloudEvent checks", n)
	}
	got := rec.delivered()
	if len(got) != 100 {
		t.Errorf("receiver got %d distinct ids, want 100", len(got))
	}
	bound := map[string]*corev1.Pod{}
	for _, p := range listPods(t, ns) {
		bound[string(p.UID)] = &p
	}
	for _, p := range pods {
		id := webhookclient.PodBoundEventID(p.UID, "audit")
		ev, ok := got[id]
		if !ok {
			t.Errorf("no notice for pod %s", p.Name)
			continue
		}
		live := bound[string(p.UID)]
		if ev.Subject != ns+"/"+p.Name || ev.Data.PodUID != string(p.UID) || ev.Data.Policy != name ||
			ev.Data.Node == "" || ev.Data.Node != live.Spec.NodeName || !strings.HasSuffix(ev.Source, "/"+name) {
			t.Errorf("pod %s: unexpected event %+v", p.Name, ev)
		}
		if ev.Data.Bound.IsZero() {
			t.Errorf("pod %s: event has no boundTime", p.Name)
		}
		if _, pending := live.Annotations[bindgatev1alpha1.PostBindPendingAnnotation]; pending {
			t.Errorf("pod %s still has the pending annotation", p.Name)
		}
	}
	// Duplicates are only retries of the same id: every request carried an id of a pod.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.attempts) != 100 {
		t.Errorf("receiver saw %d distinct ids, want 100", len(rec.attempts))
	}
}

func TestPostBindRetriesThenDeliversOrFails(t *testing.T) {
	w := newHookEnv(t)
	flaky := newReceiver(t, func(r *receiver) { r.failFirst = 2 })
	down := newReceiver(t, nil)
	down.down.Store(true)
	name := uniq("pb-retry")
	bigNode(t, name)
	pool(t, name, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.PostBind = []bindgatev1alpha1.PostBindWebhook{flaky.hook("flaky", 5), down.hook("down", 3)}
	})
	w.start(t)
	ns := namespace(t, nil)
	pods := createPods(t, ns, name, 3)

	for pod, v := range waitResults(t, ns, "flaky", 3, 30*time.Second) {
		if v != postbind.ResultDelivered {
			t.Errorf("pod %s: flaky outcome %q, want delivered", pod, v)
		}
	}
	failed := waitResults(t, ns, "down", 3, 30*time.Second)
	for _, p := range pods {
		if n := flaky.attemptsOf(webhookclient.PodBoundEventID(p.UID, "flaky")); n != 3 {
			t.Errorf("pod %s: flaky receiver saw %d attempts, want 3 (delivered on the 3rd)", p.Name, n)
		}
		if n := down.attemptsOf(webhookclient.PodBoundEventID(p.UID, "down")); n != 3 {
			t.Errorf("pod %s: down receiver saw %d attempts, want maxAttempts=3", p.Name, n)
		}
		if v := failed[p.Name]; !strings.HasPrefix(v, "failed: ") || !strings.Contains(v, "503") {
			t.Errorf("pod %s: down outcome %q, want failed: HTTP 503", p.Name, v)
		}
		live := getPod(t, ns, p.Name)
		if live.Spec.NodeName == "" {
			t.Errorf("pod %s is no longer bound", p.Name)
		}
		if _, pending := live.Annotations[bindgatev1alpha1.PostBindPendingAnnotation]; pending {
			t.Errorf("pod %s still has the pending annotation", p.Name)
		}
		eventually(t, 10*time.Second, "PostBindFailed event for "+p.Name, func() (bool, error) {
			return hasEvent(t, ns, p.Name, postbind.EventFailed, "down"), nil
		})
	}
}

func TestPostBindResendsAfterRestart(t *testing.T) {
	w := newHookEnv(t)
	rec := newReceiver(t, func(r *receiver) { r.block = make(chan struct{}) })
	name := uniq("pb-restart")
	bigNode(t, name)
	pool(t, name, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.PostBind = []bindgatev1alpha1.PostBindWebhook{rec.hook("audit", 10)}
	})
	stop := w.start(t)
	ns := namespace(t, nil)
	const n = 30
	createPods(t, ns, name, n)
	eventually(t, 30*time.Second, "all pods bound with PostBind pending", func() (bool, error) {
		c := 0
		for _, p := range listPods(t, ns) {
			if p.Spec.NodeName != "" && p.Annotations[bindgatev1alpha1.PostBindPendingAnnotation] == "audit" {
				c++
			}
		}
		return c == n, nil
	})
	eventually(t, 10*time.Second, "the receiver to be called", func() (bool, error) { return rec.requests.Load() > 0, nil })
	stop()
	close(rec.block)
	for _, p := range listPods(t, ns) {
		if _, ok := p.Annotations[postbind.ResultAnnotation("audit")]; ok {
			t.Fatalf("pod %s has an outcome before the restart", p.Name)
		}
	}

	w.start(t)
	for pod, v := range waitResults(t, ns, "audit", n, 30*time.Second) {
		if v != postbind.ResultDelivered {
			t.Errorf("pod %s: outcome %q, want delivered", pod, v)
		}
	}
	if got := len(rec.delivered()); got != n {
		t.Errorf("receiver got %d distinct notices, want %d", got, n)
	}
}

func TestPostBindHangingReceiverDelaysNothingElse(t *testing.T) {
	w := newHookEnv(t)
	hang := newReceiver(t, func(r *receiver) { r.hang = true })
	live := newReceiver(t, nil)
	slowPolicy, otherPolicy := uniq("pb-hang"), uniq("pb-live")
	bigNode(t, slowPolicy)
	bigNode(t, otherPolicy)
	pool(t, slowPolicy, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.PostBind = []bindgatev1alpha1.PostBindWebhook{hang.hook("hang", 20)}
	})
	pool(t, otherPolicy, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.PostBind = []bindgatev1alpha1.PostBindWebhook{live.hook("live", 5)}
	})
	w.start(t)
	nsHang, nsLive := namespace(t, nil), namespace(t, nil)
	// The hanging receiver is busy first.
	createPods(t, nsHang, slowPolicy, 5)
	eventually(t, 20*time.Second, "the hanging receiver to be called", func() (bool, error) { return hang.requests.Load() > 0, nil })

	start := time.Now()
	for i := range 200 {
		newPod(nsHang, fmt.Sprintf("more-%d", i)).policy(slowPolicy).req(corev1.ResourceCPU, "10m").create(t)
	}
	createPods(t, nsLive, otherPolicy, 20)
	eventually(t, 40*time.Second, "205 pods of the hanging receiver's policy bound", func() (bool, error) {
		return countBound(t, nsHang) == 205, nil
	})
	for pod, v := range waitResults(t, nsLive, "live", 20, 30*time.Second) {
		if v != postbind.ResultDelivered {
			t.Errorf("pod %s: outcome %q, want delivered", pod, v)
		}
	}
	t.Logf("200 binds and 20 notices of the other policy took %s while a receiver hung", time.Since(start))
	// The first receiver is still hanging: nothing of it is recorded yet.
	for _, p := range listPods(t, nsHang) {
		if v, ok := p.Annotations[postbind.ResultAnnotation("hang")]; ok {
			t.Errorf("pod %s: hanging hook already has an outcome %q", p.Name, v)
		}
	}
	if hang.requests.Load() == 0 {
		t.Error("the hanging receiver was never called")
	}
}

func TestBindHookRejectsThenAccepts(t *testing.T) {
	w := newHookEnv(t)
	var (
		accept  atomic.Bool
		calls   atomic.Int64
		mu      sync.Mutex
		reviews []bindhook.Review
	)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		calls.Add(1)
		var rv bindhook.Review
		if err := json.NewDecoder(req.Body).Decode(&rv); err == nil {
			mu.Lock()
			reviews = append(reviews, rv)
			mu.Unlock()
		}
		if !accept.Load() {
			rw.WriteHeader(http.StatusForbidden)
			_, _ = rw.Write([]byte(`{"message":"license pool empty"}`))
			return
		}
		rw.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	name := uniq("pb-bindhook")
	bigNode(t, name)
	pool(t, name, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.Bind = &bindgatev1alpha1.Bind{Webhook: &bindgatev1alpha1.Webhook{
			URL:      srv.URL + "/bind",
			CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
			Timeout:  &metav1.Duration{Duration: time.Second},
		}}
	})
	w.opts.WebhookBaseBackoff = 100 * time.Millisecond
	w.start(t)
	ns := namespace(t, nil)
	pod := newPod(ns, "licensed").policy(name).req(corev1.ResourceCPU, "1").create(t)

	eventually(t, 20*time.Second, "a BindWebhookRejected event naming the webhook", func() (bool, error) {
		return hasEvent(t, ns, pod.Name, bindhook.EventRejected, srv.URL+"/bind") &&
			hasEvent(t, ns, pod.Name, bindhook.EventRejected, "license pool empty"), nil
	})
	eventually(t, 10*time.Second, "a second attempt", func() (bool, error) { return calls.Load() >= 2, nil })
	if p := getPod(t, ns, pod.Name); p.Spec.NodeName != "" || len(p.Spec.SchedulingGates) == 0 {
		t.Fatalf("pod bound or ungated although the bind webhook rejected it: node %q gates %v", p.Spec.NodeName, p.Spec.SchedulingGates)
	}
	eventually(t, 10*time.Second, "the reservation to be released", func() (bool, error) {
		p := &bindgatev1alpha1.BindingPolicy{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
			return false, err
		}
		return len(p.Status.Reservations) == 0, nil
	})
	mu.Lock()
	rv := reviews[0]
	mu.Unlock()
	if rv.APIVersion != bindhook.APIVersion || rv.Kind != bindhook.KindReview || rv.UID == "" || rv.Policy != name ||
		rv.Pod != (bindhook.PodRef{Namespace: ns, Name: pod.Name, UID: pod.UID}) || rv.Node == "" {
		t.Errorf("unexpected BindReview %+v", rv)
	}

	accept.Store(true)
	eventually(t, 20*time.Second, "the pod to be bound once the webhook accepts", func() (bool, error) {
		return getPod(t, ns, pod.Name).Spec.NodeName != "", nil
	})
}

func TestPostBindForbiddenURLMakesPolicyNotReady(t *testing.T) {
	w := newHookEnv(t)
	rec := newReceiver(t, nil)
	name := uniq("pb-metadata")
	bigNode(t, name)
	metadata := rec.hook("metadata", 3)
	metadata.URL = "https://169.254.169.254/latest/meta-data/"
	pool(t, name, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.PostBind = []bindgatev1alpha1.PostBindWebhook{rec.hook("audit", 3), metadata}
	})
	w.start(t)
	var ready *metav1.Condition
	eventually(t, 20*time.Second, "Ready=False on the policy", func() (bool, error) {
		p := &bindgatev1alpha1.BindingPolicy{}
		if err := env.Client.Get(context.Background(), types.NamespacedName{Name: name}, p); err != nil {
			return false, err
		}
		ready = meta.FindStatusCondition(p.Status.Conditions, bindgatev1alpha1.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionFalse, nil
	})
	if ready.Reason != bindgatev1alpha1.ReasonInvalidWebhook || !strings.Contains(ready.Message, "spec.postBind[1].url") ||
		!strings.Contains(ready.Message, "169.254.169.254") {
		t.Errorf("Ready condition %s: %s, want InvalidWebhook naming spec.postBind[1].url and 169.254.169.254", ready.Reason, ready.Message)
	}
	ns := namespace(t, nil)
	pod := newPod(ns, "p").policy(name).create(t)
	eventually(t, 10*time.Second, "the pod to report PolicyNotReady", func() (bool, error) {
		return hasEvent(t, ns, pod.Name, bindgatev1alpha1.ReasonPolicyNotReady, "169.254.169.254"), nil
	})
	consistently(t, time.Second, "no bind under a policy that is not Ready", func() bool {
		return getPod(t, ns, pod.Name).Spec.NodeName == ""
	})
	if n := rec.requests.Load(); n != 0 {
		t.Errorf("%d webhook requests left although the policy is invalid", n)
	}
}
