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
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/bindgate/bindgate/controllers"
)

// watchEncodings records, per watch request, whether the API server
// compressed the response (the transport then decompresses it and marks the
// response Uncompressed).
type watchEncodings struct {
	mu      sync.Mutex
	gzipped []bool
}

func (w *watchEncodings) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && req.URL.Query().Get("watch") == "true" {
			w.mu.Lock()
			w.gzipped = append(w.gzipped, resp.Uncompressed || resp.Header.Get("Content-Encoding") == "gzip")
			w.mu.Unlock()
		}
		return resp, err
	})
}

func (w *watchEncodings) get() []bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]bool(nil), w.gzipped...)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// watchGzipped starts an informer cache for pods with cfg and reports whether
// its watch stream came compressed.
func watchGzipped(t *testing.T, cfg *rest.Config) bool {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	rec := &watchEncodings{}
	cfg.Wrap(rec.wrap)
	c, err := crcache.New(cfg, crcache.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.GetInformer(ctx, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the pod informer did not sync")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := rec.get()
	if len(got) == 0 {
		t.Fatal("the informer made no watch request")
	}
	for _, gz := range got {
		if gz {
			return true
		}
	}
	return false
}

// TestRESTConfigNoCompression: the API server gzips the informers' watch-list
// streams for a client that accepts it, and not for the operator's clients.
func TestRESTConfigNoCompression(t *testing.T) {
	if !watchGzipped(t, env.Config) {
		t.Fatal("control: the API server did not compress the watch stream of a plain client; the check below proves nothing")
	}
	if watchGzipped(t, controllers.RESTConfig(env.Config)) {
		t.Error("the API server compressed the watch stream of a client configured by RESTConfig")
	}
	if env.Config.DisableCompression {
		t.Error("RESTConfig changed the config it was given")
	}
}
