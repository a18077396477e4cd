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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// CloudEvents attributes of the PostBind notice.
const (
	// CloudEventsSpecVersion is the CloudEvents version emitted.
	CloudEventsSpecVersion = "1.0"
	// EventTypePodBound is the type of the event sent after a bind.
	EventTypePodBound = "dev.bindgate.pod.bound"
	// eventSourcePrefix is followed by the policy name to form the source.
	eventSourcePrefix = "/apis/scheduling.bindgate.dev/v1alpha1/bindingpolicies/"
)

// PodBoundEvent is a CloudEvents 1.0 event in structured mode whose data is
// a PodBoundData. Receivers may unmarshal the request body into it.
type PodBoundEvent struct {
	// SpecVersion is always "1.0".
	SpecVersion string `json:"specversion"`
	// Type is always EventTypePodBound.
	Type string `json:"type"`
	// Source is the policy's API path.
	Source string `json:"source"`
	// Subject is "<namespace>/<pod>".
	Subject string `json:"subject"`
	// ID is stable per pod UID and webhook, so retries reuse it and
	// receivers can deduplicate on it.
	ID string `json:"id"`
	// Time is when the event was built.
	Time time.Time `json:"time"`
	// DataContentType is always application/json.
	DataContentType string `json:"datacontenttype"`
	// Data describes the bound pod.
	Data PodBoundData `json:"data"`
}

// PodBoundData is the data of a PodBoundEvent.
type PodBoundData struct {
	// PodUID is the bound pod's UID.
	PodUID string `json:"podUID"`
	// Namespace is the bound pod's namespace.
	Namespace string `json:"namespace"`
	// Name is the bound pod's name.
	Name string `json:"name"`
	// Node is the node the pod was bound to.
	Node string `json:"node"`
	// Policy is the BindingPolicy that bound the pod.
	Policy string `json:"policy"`
	// Resources are the pod's effective requests.
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// GateSeen is when bindgate first saw the gated pod.
	GateSeen metav1.Time `json:"gateSeenTime,omitzero"`
	// Reserved is when the pod's reservation was taken.
	Reserved metav1.Time `json:"reservedTime,omitzero"`
	// Permitted is when every permit condition approved.
	Permitted metav1.Time `json:"permittedTime,omitzero"`
	// Bound is when the binding was created.
	Bound metav1.Time `json:"boundTime,omitzero"`
}

// PodBoundEventID is the stable event id: the hex sha256 of
// podUID + "/" + webhookName.
func PodBoundEventID(podUID types.UID, webhookName string) string {
	sum := sha256.Sum256([]byte(string(podUID) + "/" + webhookName))
	return hex.EncodeToString(sum[:])
}

// NewPodBoundEvent builds the structured-mode CloudEvent that PostBind sends
// to webhookName, and returns its JSON and its id (to pass as msgID to
// Client.DoCloudEvent). The PodUID, Namespace, Name and Policy of data are
// set from the arguments.
func NewPodBoundEvent(policy string, pod types.NamespacedName, podUID types.UID, webhookName string,
	data PodBoundData) ([]byte, string, error) {
	if policy == "" || pod.Name == "" || podUID == "" || webhookName == "" {
		return nil, "", errors.New("pod bound event needs a policy, a pod name, a pod UID and a webhook name")
	}
	data.PodUID = string(podUID)
	data.Namespace = pod.Namespace
	data.Name = pod.Name
	data.Policy = policy
	ev := PodBoundEvent{
		SpecVersion:     CloudEventsSpecVersion,
		Type:            EventTypePodBound,
		Source:          eventSourcePrefix + policy,
		Subject:         pod.Namespace + "/" + pod.Name,
		ID:              PodBoundEventID(podUID, webhookName),
		Time:            time.Now().UTC(),
		DataContentType: ContentTypeJSON,
		Data:            data,
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, "", fmt.Errorf("encoding pod bound event: %w", err)
	}
	return body, ev.ID, nil
}
