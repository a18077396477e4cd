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

package permit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	ctrl "sigs.k8s.io/controller-runtime"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// PermitReview is the body POSTed to a permit webhook.
type PermitReview struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Request    *PermitReviewRequest  `json:"request,omitempty"`
	Response   *PermitReviewResponse `json:"response,omitempty"`
}

// PermitReviewRequest describes the pod and the node it reserved.
type PermitReviewRequest struct {
	// UID identifies the call; it is also the webhook-id header.
	UID    types.UID       `json:"uid"`
	Pod    PermitReviewPod `json:"pod"`
	Node   string          `json:"node"`
	Policy string          `json:"policy"`
}

// PermitReviewPod is the part of the pod a permit webhook sees.
type PermitReviewPod struct {
	Namespace   string            `json:"namespace"`
	Name        string            `json:"name"`
	UID         types.UID         `json:"uid"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PermitReviewResponse is the webhook's answer: allowed approves; not
// allowed rejects with reason, unless wait is set, which holds the pod and
// asks again after retryAfterSeconds.
type PermitReviewResponse struct {
	Allowed           bool   `json:"allowed"`
	Reason            string `json:"reason,omitempty"`
	Wait              bool   `json:"wait,omitempty"`
	RetryAfterSeconds int32  `json:"retryAfterSeconds,omitempty"`
}

// PermitReview's apiVersion and kind.
const (
	PermitReviewAPIVersion = "scheduling.bindgate.dev/v1alpha1"
	PermitReviewKind       = "PermitReview"
)

// Webhook timings.
const (
	// InFlightRecheck is when a pod whose webhook call is still running is
	// looked at again (the call's end requeues it sooner through Wake).
	InFlightRecheck = time.Second
	// FailureRecheck is when a failed call (failurePolicy Fail) is retried.
	FailureRecheck = time.Second
	// DefaultRetryAfter is the wait of a "wait" answer without retryAfterSeconds.
	DefaultRetryAfter = 5 * time.Second
	// allowedTTL is how long an approval stands while other conditions of
	// the pod still wait.
	allowedTTL = 10 * time.Second
	// forgetAfter drops the state of calls for pods long gone (the longest
	// permit timeout).
	forgetAfter = 15 * time.Minute
)

// ReasonInFlight is the wait reason while the call runs.
const ReasonInFlight = "webhook call in flight"

// callKey identifies the calls of one condition for one pod.
type callKey struct {
	pod    types.UID
	policy string
	cond   string
}

// callEntry is a call in flight (done false) or its answer until expires.
type callEntry struct {
	node    string
	started time.Time
	done    bool
	expires time.Time
	status  *framework.Status // nil: approved
	after   time.Duration
	// prev is the wait reason of the previous answer, reported while the
	// next call runs so that the pod's condition does not flap.
	prev *framework.Status
}

// PermitWebhook is the permit plugin of one webhook condition. Calls run in their
// own goroutines: a reconcile never waits for a webhook, so a slow or
// hanging service delays only the pods of its own condition.
type PermitWebhook struct {
	b      *Builder
	name   string
	policy string
	wh     bindgatev1alpha1.PermitWebhook
}

var _ framework.PermitPlugin = (*PermitWebhook)(nil)

// Name is the condition's name.
func (w *PermitWebhook) Name() string { return w.name }

// Permit returns the answer of the last call when it still stands, and
// otherwise starts a call and holds the pod until it ends.
func (w *PermitWebhook) Permit(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node *corev1.Node) (*framework.Status, time.Duration) {
	if w.b.Webhooks == nil {
		return framework.NewStatus(framework.Wait, "no webhook client configured"), RecheckAfter
	}
	key := callKey{pod: pod.UID, policy: w.policy, cond: w.name}
	now := time.Now()
	w.b.mu.Lock()
	if w.b.calls == nil {
		w.b.calls = map[callKey]*callEntry{}
	}
	e := w.b.calls[key]
	if e != nil && e.node == node.Name {
		if !e.done {
			st := e.prev
			w.b.mu.Unlock()
			if st == nil {
				st = framework.NewStatus(framework.Wait, ReasonInFlight)
			}
			return st, InFlightRecheck
		}
		if now.Before(e.expires) {
			st, after := e.status, e.expires.Sub(now)
			if st != nil && st.Code() != framework.Wait {
				delete(w.b.calls, key) // a rejection is used once
			}
			w.b.mu.Unlock()
			return st, after
		}
	}
	next := &callEntry{node: node.Name, started: now}
	if e != nil && e.node == node.Name && e.status.IsWait() {
		next.prev = e.status
	}
	e = next
	w.b.calls[key] = e
	for k, old := range w.b.calls {
		if now.Sub(old.started) > forgetAfter {
			delete(w.b.calls, k)
		}
	}
	w.b.mu.Unlock()

	review := PermitReview{
		APIVersion: PermitReviewAPIVersion, Kind: PermitReviewKind,
		Request: &PermitReviewRequest{
			UID: uuid.NewUUID(),
			Pod: PermitReviewPod{
				Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
				Labels: pod.Labels, Annotations: pod.Annotations,
			},
			Node: node.Name, Policy: w.policy,
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		w.b.mu.Lock()
		delete(w.b.calls, key)
		w.b.mu.Unlock()
		return framework.NewStatus(framework.Wait, "encoding the PermitReview: "+err.Error()), FailureRecheck
	}
	podKey := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	// The call outlives the reconcile: it is bounded by the webhook's own
	// timeout, not by ctx.
	callCtx := ctrl.LoggerInto(context.WithoutCancel(ctx), ctrl.LoggerFrom(ctx))
	go w.call(callCtx, key, e, podKey, string(review.Request.UID), body)
	if e.prev != nil {
		return e.prev, InFlightRecheck
	}
	return framework.NewStatus(framework.Wait, ReasonInFlight), InFlightRecheck
}

// call performs one call and stores its answer.
func (w *PermitWebhook) call(ctx context.Context, key callKey, e *callEntry, pod types.NamespacedName, msgID string, body []byte) {
	resp, err := w.b.Webhooks.Do(ctx, webhookclient.KindPermit, w.name, &w.wh.Webhook, msgID, body)
	st, after := w.interpret(resp, err)
	now := time.Now()
	w.b.mu.Lock()
	if w.b.calls[key] == e {
		e.done, e.status, e.after, e.expires = true, st, after, now.Add(after)
	}
	w.b.mu.Unlock()
	if w.b.Wake != nil {
		w.b.Wake(pod)
	}
}

// interpret turns the webhook's answer (or failure) into a permit status
// and how long it stands.
//
// failurePolicy covers only a call that got no answer (timeout, connection
// error): Ignore approves then. An answer that is not 2xx, or a 2xx one
// that is malformed, is never an approval: the pod keeps waiting with the
// reason, whatever the failurePolicy. So is a destination refused at dial.
func (w *PermitWebhook) interpret(resp *webhookclient.Response, err error) (*framework.Status, time.Duration) {
	answered := err == nil
	if err == nil {
		err = checkResponse(resp)
	}
	if err == nil {
		var review PermitReview
		if jerr := json.Unmarshal(resp.Body, &review); jerr != nil {
			err = fmt.Errorf("malformed response: %w", jerr)
		} else if review.Response == nil {
			err = errors.New("malformed response: no response field")
		} else {
			r := review.Response
			switch {
			case r.Allowed:
				return nil, allowedTTL
			case r.Wait:
				after := time.Duration(r.RetryAfterSeconds) * time.Second
				if after <= 0 {
					after = DefaultRetryAfter
				}
				reason := "webhook asked to wait"
				if r.Reason != "" {
					reason += ": " + webhookclient.Excerpt(r.Reason, MaxReason)
				}
				return framework.NewStatus(framework.Wait, reason), after
			default:
				reason := webhookclient.Excerpt(r.Reason, MaxReason)
				if reason == "" {
					reason = "rejected by the webhook"
				}
				return framework.NewStatus(framework.Unschedulable, reason), allowedTTL
			}
		}
	}
	if answered {
		return framework.NewStatus(framework.Wait, "webhook answer not usable: "+webhookclient.Excerpt(err.Error(), MaxReason)), FailureRecheck
	}
	if w.wh.FailurePolicy == bindgatev1alpha1.FailurePolicyIgnore && !errors.Is(err, webhookclient.ErrForbiddenDestination) {
		return nil, allowedTTL
	}
	return framework.NewStatus(framework.Wait, "webhook call failed (failurePolicy Fail): "+webhookclient.Excerpt(err.Error(), MaxReason)), FailureRecheck
}

// MaxReason caps the text of a webhook's answer (or failure) that goes
// into a pod's condition and events.
const MaxReason = 256

func checkResponse(resp *webhookclient.Response) error {
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusMultipleChoices {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}
