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

package policy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/bind"
	"github.com/bindgate/bindgate/internal/gang"
	"github.com/bindgate/bindgate/internal/webhookclient"
)

// BoundIndex indexes the pods in the informer cache that count against a
// policy: bound by it and not terminated. IndexBound adds it.
const BoundIndex = "bindgate.boundPolicy"

// BoundTo is the policy a pod counts against ("" when none): the sealed
// record of the policy that bound it, never a policy its owner named.
func BoundTo(pod *corev1.Pod) string {
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return ""
	}
	p, _ := bind.BoundBy(pod)
	return p
}

// IndexBound adds BoundIndex to the pod informer and returns the
// informer's own indexer (Usage reads it without copying a list).
func IndexBound(ctx context.Context, informers crcache.Informers) (toolscache.Indexer, error) {
	informer, err := informers.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("getting the pod informer: %w", err)
	}
	sii, ok := informer.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("the pod informer is a %T, not a SharedIndexInformer", informer)
	}
	if err := sii.AddIndexers(toolscache.Indexers{BoundIndex: func(o any) ([]string, error) {
		if pod, ok := o.(*corev1.Pod); ok {
			if p := BoundTo(pod); p != "" {
				return []string{p}, nil
			}
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing pods by the policy that bound them: %w", err)
	}
	return sii.GetIndexer(), nil
}

// Usage counts p's bound, non-terminated pods and what it uses: their
// requests plus its recorded reservations of pods not yet seen bound, for
// cpu, memory and the resources its capacity lists. pods is the informer's
// own index (IndexBound): its pods as they are, no list copied (a list of
// every bound pod every few seconds was most of the operator's garbage at
// 10000 pods).
func Usage(pods toolscache.Indexer, p *bindgatev1alpha1.BindingPolicy) (int32, corev1.ResourceList, error) {
	objs, err := pods.ByIndex(BoundIndex, p.Name)
	if err != nil {
		return 0, nil, fmt.Errorf("listing the pods of BindingPolicy %s: %w", p.Name, err)
	}
	used := corev1.ResourceList{}
	add := func(l corev1.ResourceList) {
		for name, q := range l {
			if _, capped := p.Spec.Capacity[name]; !capped && name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				continue
			}
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	bound := make(map[types.UID]bool, len(objs))
	for _, o := range objs {
		pod, ok := o.(*corev1.Pod)
		if !ok {
			continue
		}
		bound[pod.UID] = true
		add(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	}
	for _, res := range p.Status.Reservations {
		if !bound[res.PodUID] {
			add(res.Resources)
		}
	}
	if len(used) == 0 {
		used = nil
	}
	return int32(len(bound)), used, nil
}

// MissingSecret names the first signingSecretRef of p (bind, permit and
// PostBind webhooks) whose Secret or key secrets cannot read in namespace
// ("" when all can): the policy is not Ready until it can.
func MissingSecret(ctx context.Context, secrets webhookclient.SecretGetter, namespace string, p *bindgatev1alpha1.BindingPolicy) string {
	for _, s := range secretRefs(p) {
		_, err := secrets.GetSecretKey(ctx, namespace, s.ref.Name, s.ref.Key)
		switch {
		case err == nil:
			continue
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("%s: signingSecretRef: Secret %s/%s not found", s.field, namespace, s.ref.Name)
		default:
			return fmt.Sprintf("%s: signingSecretRef: Secret %s/%s, key %s: %v", s.field, namespace, s.ref.Name, s.ref.Key, err)
		}
	}
	return ""
}

// HasSecrets says whether any webhook of p names a signingSecretRef.
func HasSecrets(p *bindgatev1alpha1.BindingPolicy) bool { return len(secretRefs(p)) > 0 }

// secretRef is one signingSecretRef and the field that holds it.
type secretRef struct {
	field string
	ref   *bindgatev1alpha1.SecretKeyRef
}

func secretRefs(p *bindgatev1alpha1.BindingPolicy) []secretRef {
	var refs []secretRef
	add := func(field string, wh *bindgatev1alpha1.Webhook) {
		if wh != nil && wh.SigningSecretRef != nil {
			refs = append(refs, secretRef{field: field, ref: wh.SigningSecretRef})
		}
	}
	if p.Spec.Bind != nil {
		add("spec.bind.webhook", p.Spec.Bind.Webhook)
	}
	if p.Spec.Permit != nil {
		for i := range p.Spec.Permit.Conditions {
			if c := &p.Spec.Permit.Conditions[i]; c.Webhook != nil {
				add(fmt.Sprintf("spec.permit.conditions[%d] (%s)", i, c.Name), &c.Webhook.Webhook)
			}
		}
	}
	for i := range p.Spec.PostBind {
		h := &p.Spec.PostBind[i]
		add(fmt.Sprintf("spec.postBind[%d] (%s)", i, h.Name), &h.Webhook)
	}
	return refs
}

// Gangs is the gangs part of the policy's status (see gang.Summarize), from
// the pods it bound (the pod informer's index) and their nodes (read
// through c, the manager's cache).
func Gangs(ctx context.Context, pods toolscache.Indexer, c client.Reader, p *bindgatev1alpha1.BindingPolicy) (*bindgatev1alpha1.GangsStatus, error) {
	objs, err := pods.ByIndex(BoundIndex, p.Name)
	if err != nil {
		return nil, fmt.Errorf("listing the pods of BindingPolicy %s: %w", p.Name, err)
	}
	var members []*corev1.Pod
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok && (pod.Labels[bindgatev1alpha1.GroupLabel] != "" || gang.PodGroupName(pod) != "") {
			members = append(members, pod)
		}
	}
	if len(members) == 0 {
		return nil, nil
	}
	nodes := map[string]*corev1.Node{}
	nodeOf := func(name string) *corev1.Node {
		if n, ok := nodes[name]; ok {
			return n
		}
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			n = nil
		}
		nodes[name] = n
		return n
	}
	return gang.Summarize(members, gang.Levels(p), nodeOf), nil
}
