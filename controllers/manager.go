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

package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// RESTConfig returns a copy of cfg as the operator's clients use it: without
// response compression, as kube-scheduler's clients (it sets
// DisableCompression too). Otherwise the API server gzips every event of the
// informers' watch-list streams, each flush on its own — CPU it and the
// operator spend on every pod update, for a connection that usually stays
// inside the cluster.
func RESTConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.DisableCompression = true
	return cfg
}

// CacheOptions keeps only what the cycle needs in the informer cache:
// managedFields are stripped from every object, and the strings and the
// label and nodeSelector maps pods repeat are shared between them
// (internPod).
func CacheOptions() crcache.Options {
	strip := crcache.TransformStripManagedFields()
	return crcache.Options{
		DefaultTransform: strip,
		ByObject: map[client.Object]crcache.ByObject{
			&corev1.Pod{}: {Transform: func(obj any) (any, error) {
				obj, err := strip(obj)
				if pod, ok := obj.(*corev1.Pod); ok {
					internPod(pod)
				}
				return obj, err
			}},
		},
	}
}

// protobufConfig returns a copy of cfg that speaks protobuf, as
// kube-scheduler's clients do (clientConnection.contentType). For built-in
// types only: the API server serves custom resources as JSON.
// controller-runtime's own clients pick protobuf per type by themselves,
// but a clientset made from the manager's config, such as the one its event
// recorder uses, speaks JSON: the API server then decodes and encodes JSON
// for every event and every watch event of those informers.
func protobufConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg
}

// protobufClientset is a clientset over the manager's HTTP client that
// speaks protobuf.
func protobufClientset(mgr ctrl.Manager) (kubernetes.Interface, error) {
	cs, err := kubernetes.NewForConfigAndClient(protobufConfig(mgr.GetConfig()), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating a clientset: %w", err)
	}
	return cs, nil
}

// newEventRecorder returns the recorder of bindgate's events.k8s.io/v1
// events, sent in protobuf as kube-scheduler sends its own (the manager's
// recorder sends JSON, which costs the API server more on the one event
// every bound pod gets), and cut to MaxEventNote. The broadcaster runs with
// the manager and is flushed when it stops.
func newEventRecorder(ctx context.Context, mgr ctrl.Manager, cs kubernetes.Interface) (events.EventRecorder, error) {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(ctrl.LoggerInto(ctx, ctrl.Log.WithName("events"))); err != nil {
		return nil, fmt.Errorf("starting the event broadcaster: %w", err)
	}
	if err := mgr.Add(broadcasterStopper{b}); err != nil {
		return nil, fmt.Errorf("adding the event broadcaster: %w", err)
	}
	return boundedRecorder{b.NewRecorder(mgr.GetScheme(), "bindgate")}, nil
}

// broadcasterStopper shuts the broadcaster down when the manager stops. It
// runs on every replica, leader or not (the policy and PostBind
// controllers' events go through it too).
type broadcasterStopper struct{ b events.EventBroadcaster }

// Start implements manager.Runnable.
func (s broadcasterStopper) Start(ctx context.Context) error {
	<-ctx.Done()
	s.b.Shutdown()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (broadcasterStopper) NeedLeaderElection() bool { return false }

var _ manager.LeaderElectionRunnable = broadcasterStopper{}
