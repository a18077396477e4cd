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

// Package bindhook calls a policy's bind webhook (spec.bind.webhook) after
// PreBind and before the pod is ungated and bound, so that an external
// system (CMDB, license server, IPAM) learns of the bind before the API
// server does. A 2xx answer lets the bind proceed; anything else, or a
// timeout, is a Rejection that carries the backoff before the next cycle.
package bindhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/util/workqueue"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// Event reasons.
const (
	// EventRejected: the webhook answered with a non-2xx status.
	EventRejected = "BindWebhookRejected"
	// EventFailed: the webhook could not be reached or timed out.
	EventFailed = "BindWebhookFailed"
)

// APIVersion and Kind of the request body.
const (
	APIVersion = "scheduling.bindgate.dev/v1alpha1"
	KindReview = "BindReview"
)

// Defaults of the retry backoff.
const (
	DefaultBaseBackoff = time.Second
	DefaultMaxBackoff  = 5 * time.Minute
)

// maxMessage caps the receiver's message copied into events.
const maxMessage = 256

// PodRef identifies the pod in a BindReview.
type PodRef struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
}

// Review is the body POSTed to a bind webhook.
type Review struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// UID identifies this request; it is also the webhook-id header.
	UID    string `json:"uid"`
	Pod    PodRef `json:"pod"`
	Node   string `json:"node"`
	Policy string `json:"policy"`
}

// Rejection says why the bind may not proceed now.
type Rejection struct {
	// Reason is EventRejected or EventFailed.
	Reason string
	// Message names the webhook and says why.
	Message string
	// RetryAfter is the backoff before the next cycle.
	RetryAfter time.Duration
}

// Caller calls spec.bind.webhook. It is safe for concurrent use.
type Caller struct {
	Client *webhookclient.Client
	// BaseBackoff is the first retry delay; it doubles per consecutive
	// rejection of the same pod, up to MaxBackoff (client-go's per-item
	// exponential rate limiter).
	BaseBackoff time.Duration
	MaxBackoff  time.Duration

	mu      sync.Mutex
	limiter workqueue.TypedRateLimiter[types.UID]
	// tracked counts the pods the limiter holds: pods deleted while
	// rejected are never forgotten, so past maxTracked it starts over.
	tracked int
}

// maxTracked bounds the pods whose backoff the caller remembers.
const maxTracked = 100000

// Name is how the bind webhook of policy is named in metrics and events.
func Name(policy *bindgatev1alpha1.BindingPolicy) string {
	return policy.Name + "/bind"
}

// Call calls policy's bind webhook for pod on node. It returns nil when the
// policy has no bind webhook or the webhook answered 2xx.
func (c *Caller) Call(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, pod *corev1.Pod, node string) *Rejection {
	if policy.Spec.Bind == nil || policy.Spec.Bind.Webhook == nil {
		return nil
	}
	wh := policy.Spec.Bind.Webhook
	review := Review{
		APIVersion: APIVersion, Kind: KindReview, UID: string(uuid.NewUUID()),
		Pod:  PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Node: node, Policy: policy.Name,
	}
	body, err := json.Marshal(review)
	if err != nil {
		return c.reject(pod.UID, EventFailed, wh, fmt.Sprintf("encoding the request: %v", err))
	}
	resp, err := c.Client.Do(ctx, webhookclient.KindBind, Name(policy), wh, review.UID, body)
	if err != nil {
		reason := err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			reason = "timed out: " + reason
		}
		return c.reject(pod.UID, EventFailed, wh, reason)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return c.reject(pod.UID, EventRejected, wh, fmt.Sprintf("HTTP %d%s", resp.StatusCode, answerMessage(resp.Body)))
	}
	c.Forget(pod.UID)
	return nil
}

// Forget drops the backoff state of a pod.
func (c *Caller) Forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limiter != nil && c.limiter.NumRequeues(uid) > 0 {
		c.limiter.Forget(uid)
		c.tracked--
	}
}

func (c *Caller) reject(uid types.UID, reason string, wh *bindgatev1alpha1.Webhook, why string) *Rejection {
	verb := "rejected the bind"
	if reason == EventFailed {
		verb = "failed"
	}
	return &Rejection{
		Reason:     reason,
		Message:    fmt.Sprintf("bind webhook %s %s: %s", Display(webhookclient.URLOf(wh)), verb, why),
		RetryAfter: c.backoff(uid),
	}
}

func (c *Caller) backoff(uid types.UID) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limiter == nil || c.tracked >= maxTracked {
		base, maxDelay := c.BaseBackoff, c.MaxBackoff
		if base <= 0 {
			base = DefaultBaseBackoff
		}
		if maxDelay <= 0 {
			maxDelay = DefaultMaxBackoff
		}
		c.limiter = workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](base, maxDelay)
		c.tracked = 0
	}
	if c.limiter.NumRequeues(uid) == 0 {
		c.tracked++
	}
	return c.limiter.When(uid)
}

// Display is a webhook URL without credentials or query, for messages.
func Display(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<invalid url>"
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// answerMessage extracts {"message": "..."} (or the raw text) from a
// rejecting answer, capped.
func answerMessage(body []byte) string {
	var ans struct {
		Message string `json:"message"`
	}
	msg := ""
	if err := json.Unmarshal(body, &ans); err == nil {
		msg = ans.Message
	} else {
		msg = string(body)
	}
	msg = webhookclient.Excerpt(msg, maxMessage)
	if msg == "" {
		return ""
	}
	return ": " + msg
}
