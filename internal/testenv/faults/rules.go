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

package faults

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

// Kind is one kind of fault.
type Kind string

const (
	// Throttle answers 429 Too Many Requests with a Retry-After header
	// (client-go waits and retries these itself).
	Throttle Kind = "429-throttle"
	// ServerError answers 500 or 503 without Retry-After: the client sees
	// the error.
	ServerError Kind = "5xx-server-error"
	// Conflict answers 409 Conflict to a write without forwarding it.
	Conflict Kind = "409-conflict"
	// TimeoutAfterApply forwards a write, and once the API server has
	// applied it, answers 504 Gateway Timeout: the write took effect but
	// the client saw an error.
	TimeoutAfterApply Kind = "504-after-apply"
	// Latency delays a request by up to Config.MaxLatency.
	Latency Kind = "latency"
	// WatchCut ends a watch stream after a random time in
	// [Config.WatchCutMin, Config.WatchCutMax], in the middle of an event
	// when one is being sent (half of its bytes reach the client).
	WatchCut Kind = "watch-cut"
	// Reset resets the client's TCP connection (RST) instead of answering:
	// every request multiplexed on it fails.
	Reset Kind = "connection-reset"
)

// Kinds lists every kind, in the order they are reported.
var Kinds = []Kind{Throttle, ServerError, Conflict, TimeoutAfterApply, Latency, WatchCut, Reset}

// Request is what a rule sees of a request.
type Request struct {
	// Verb is the Kubernetes verb: get, list, watch, create, update, patch,
	// delete, deletecollection (or the HTTP method, lower case, for
	// non-resource requests).
	Verb        string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
}

// Write reports whether the request changes state.
func (r Request) Write() bool {
	switch r.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// Rule injects one kind of fault into a fraction of the matching requests.
type Rule struct {
	// Kind is the fault.
	Kind Kind
	// Rate is the fraction of matching requests that get it, in [0, 1].
	Rate float64
	// Match selects the requests the rule applies to; nil matches all the
	// requests the kind can apply to (writes for Conflict and
	// TimeoutAfterApply, watches for WatchCut).
	Match func(Request) bool
}

func validate(rules []Rule) error {
	for i, r := range rules {
		if !sets.New(Kinds...).Has(r.Kind) {
			return fmt.Errorf("rules[%d].kind: unknown fault %q", i, r.Kind)
		}
		if r.Rate < 0 || r.Rate > 1 {
			return fmt.Errorf("rules[%d].rate: %v is outside [0, 1]", i, r.Rate)
		}
	}
	return nil
}

// SetRules replaces the rules (nil: no more faults) for the requests that
// arrive from now on.
func (p *Proxy) SetRules(rules []Rule) error {
	if err := validate(rules); err != nil {
		return err
	}
	p.mu.Lock()
	p.rules = rules
	p.mu.Unlock()
	return nil
}

// Counts returns how many faults of each kind the proxy injected.
func (p *Proxy) Counts() map[Kind]int64 {
	out := make(map[Kind]int64, len(p.counts))
	for k, c := range p.counts {
		out[k] = c.Load()
	}
	return out
}

// Requests is how many requests the proxy received.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// Injected is the total number of faults injected.
func (p *Proxy) Injected() int64 {
	var n int64
	for _, c := range p.counts {
		n += c.Load()
	}
	return n
}

// Summary is one line: requests and the faults of each kind injected.
func (p *Proxy) Summary() string {
	counts := p.Counts()
	parts := make([]string, 0, len(Kinds))
	for _, k := range Kinds {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	return fmt.Sprintf("seed %d: %d requests, faults injected: %s", p.cfg.Seed, p.Requests(), strings.Join(parts, " "))
}

// roll decides, for each rule that matches the request, whether its fault
// applies; it returns the kinds picked.
func (p *Proxy) roll(req Request) map[Kind]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	picked := map[Kind]bool{}
	for _, r := range p.rules {
		if !applies(r, req) {
			continue
		}
		if p.rng.Float64() < r.Rate {
			picked[r.Kind] = true
		}
	}
	return picked
}

func applies(r Rule, req Request) bool {
	switch r.Kind {
	case Conflict, TimeoutAfterApply:
		if !req.Write() {
			return false
		}
	case WatchCut:
		if req.Verb != "watch" {
			return false
		}
	}
	return r.Match == nil || r.Match(req)
}

func (p *Proxy) duration(lo, hi time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(p.rng.Int64N(int64(hi-lo)))
}

func (p *Proxy) describe(r *http.Request) Request {
	info, err := p.infos.NewRequestInfo(r)
	if err != nil || !info.IsResourceRequest {
		return Request{Verb: strings.ToLower(r.Method)}
	}
	return Request{Verb: info.Verb, Resource: info.Resource, Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name}
}
