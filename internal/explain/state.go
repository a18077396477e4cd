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

// Package explain answers "why is my pod pending?" and "what would this
// policy do?" from the API server's state, with the code the operator runs:
// internal/policy matches the pod, internal/placement runs kube-scheduler's
// plugins and bindgate's policy plugins over a cache built from the nodes,
// the bound pods and the reservations recorded in the policies' status, and
// internal/permit evaluates the permit expressions. It reads; it never
// writes to the cluster.
package explain

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/placement"
)

// Options say where the state is read from.
type Options struct {
	// Client reads pods, nodes, namespaces, policies, events and the seal
	// key Secret; its scheme must know BindingPolicy.
	Client client.Client
	// Clientset feeds the informers of kube-scheduler's plugins (volumes,
	// storage classes, CSI objects, workload owners).
	Clientset kubernetes.Interface
	// OperatorNamespace and SealKeySecret name the Secret that holds the
	// key of the seals on bound pods' policy records (the operator's
	// --operator-namespace and --seal-key-secret). When it cannot be read,
	// bound pods are charged to the policy their record names, unverified,
	// and the report says so.
	OperatorNamespace string
	SealKeySecret     string
	// Clock is the time reports are relative to (default: the real clock).
	Clock clock.PassiveClock
}

// state is the cluster as the operator would see it, read once, with a
// Placer over a cache built from it.
type state struct {
	opts       Options
	pods       map[types.UID]*corev1.Pod
	byName     map[types.NamespacedName]*corev1.Pod
	nodes      map[string]*corev1.Node
	policies   []bindgatev1alpha1.BindingPolicy
	namespaces map[string]map[string]string
	cache      *cache.Cache
	placer     *placement.Placer
	notes      []string
	// trustRecords: the seal key is not known; bound pods' policy
	// records are re-sealed under the installed key (see useSealKey).
	trustRecords bool
	// assumed are the pods a simulation placed, in order.
	assumed []assumed
	// recorded maps a pod to its reservation in a policy's status.
	recorded map[types.UID]recorded
}

type recorded struct {
	policy string
	res    *bindgatev1alpha1.Reservation
}

// load reads the cluster and builds the cache and the Placer. The Placer's
// informers stop when ctx ends.
func load(ctx context.Context, opts Options) (*state, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	s := &state{
		opts: opts, pods: map[types.UID]*corev1.Pod{}, byName: map[types.NamespacedName]*corev1.Pod{},
		nodes: map[string]*corev1.Node{}, namespaces: map[string]map[string]string{}, recorded: map[types.UID]recorded{},
	}
	s.useSealKey(ctx)
	var pods corev1.PodList
	if err := opts.Client.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	var nodes corev1.NodeList
	if err := opts.Client.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var nss corev1.NamespaceList
	if err := opts.Client.List(ctx, &nss); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	var policies bindgatev1alpha1.BindingPolicyList
	if err := opts.Client.List(ctx, &policies); err != nil {
		return nil, fmt.Errorf("listing BindingPolicies: %w", err)
	}
	for i := range nss.Items {
		s.namespaces[nss.Items[i].Name] = nss.Items[i].Labels
	}
	s.policies = policies.Items
	s.cache = cache.New(ctx, opts.Clock)
	for i := range nodes.Items {
		n := &nodes.Items[i]
		s.nodes[n.Name] = n
		s.cache.UpsertNode(n)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		s.pods[p.UID] = p
		s.byName[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
		s.cache.UpsertPod(s.sealed(p))
	}
	// Recorded reservations, as the operator loads them after a restart:
	// those whose pod is gone or bound, or whose node is gone, are stale.
	for i := range s.policies {
		pol := &s.policies[i]
		for j := range pol.Status.Reservations {
			res := &pol.Status.Reservations[j]
			pod, ok := s.pods[res.PodUID]
			if _, nodeOK := s.nodes[res.Node]; !ok || pod.Spec.NodeName != "" || !nodeOK {
				continue
			}
			s.recorded[res.PodUID] = recorded{policy: pol.Name, res: res}
			s.cache.AddRecorded(pol.Name, res, func(*bindgatev1alpha1.Reservation) *corev1.Pod { return pod })
		}
	}
	p, err := placement.New(ctx, placement.Options{
		Cache: s.cache, Client: opts.Clientset, Informers: informers.NewSharedInformerFactory(opts.Clientset, 0),
		DRA: placement.DRAOptions{Refusal: ErrReasonDRA},
	})
	if err != nil {
		return nil, err
	}
	go func() { _ = p.Start(ctx) }()
	s.placer = p
	return s, nil
}

// useSealKey installs the operator's seal key, so that bound pods are
// charged to the policy that bound them exactly as the operator charges
// them. Without it (the Secret is not readable), bound pods' unverified
// policy records are trusted, and a note says so.
func (s *state) useSealKey(ctx context.Context) {
	var secret corev1.Secret
	key := types.NamespacedName{Namespace: s.opts.OperatorNamespace, Name: s.opts.SealKeySecret}
	err := s.opts.Client.Get(ctx, key, &secret)
	if err == nil && len(secret.Data["key"]) > 0 {
		bind.UseSealKey(secret.Data["key"])
		return
	}
	if err == nil {
		err = fmt.Errorf("it holds no key")
	}
	s.notes = append(s.notes, fmt.Sprintf("the seal key Secret %s could not be read (%v): bound pods are charged to the policy their record names, unverified", key, err))
	if bind.Seal("", "") == "" {
		local := make([]byte, 32)
		_, _ = rand.Read(local)
		bind.UseSealKey(local)
	}
	s.trustRecords = true
}

// sealed is pod as the cache should count it: with the seal re-made under
// the local key when the operator's key is not available.
func (s *state) sealed(pod *corev1.Pod) *corev1.Pod {
	name := pod.Annotations[bindgatev1alpha1.PolicyAnnotation]
	if !s.trustRecords || pod.Spec.NodeName == "" || name == "" {
		return pod
	}
	p := pod.DeepCopy()
	p.Annotations = maps.Clone(p.Annotations)
	p.Annotations[bindgatev1alpha1.SealAnnotation] = bind.Seal(p.UID, name)
	return p
}

// evaluate runs the placement plugins for pod under policy, with the pod's
// own reservation (if any) out of the cache, as the operator re-checks it.
func (s *state) evaluate(ctx context.Context, pod *corev1.Pod, policy *bindgatev1alpha1.BindingPolicy) (*placement.Evaluation, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s.placer.Lock()
	defer s.placer.Unlock()
	if r, ok := s.recorded[pod.UID]; ok {
		s.cache.Unreserve(pod.UID, false)
		defer s.cache.AddRecorded(r.policy, r.res, func(*bindgatev1alpha1.Reservation) *corev1.Pod { return pod })
	}
	return s.placer.Evaluate(ctx, pod, policy)
}
