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

package invariants

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/cache"
	"github.com/bindgate/bindgate/internal/placement"
)

// Breach is a bound pod that kube-scheduler's Filter plugins refuse on its
// node.
type Breach struct {
	Pod, Node, Message string
}

func (b Breach) String() string { return fmt.Sprintf("%s on %s: %s", b.Pod, b.Node, b.Message) }

// Recheck runs kube-scheduler's PreFilter and Filter plugins (through
// bindgate's placement, the pinned k8s.io/kubernetes in-tree plugins) for
// every bound pod of pods on its node, against the cluster as it is now with
// that pod taken out, and returns the breaches.
func Recheck(ctx context.Context, cs kubernetes.Interface, c client.Client, pods []corev1.Pod) ([]Breach, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var nodes corev1.NodeList
	var all corev1.PodList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	if err := c.List(ctx, &all); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	snap := cache.New(ctx, nil)
	for i := range nodes.Items {
		snap.UpsertNode(&nodes.Items[i])
	}
	for i := range all.Items {
		snap.UpsertPod(&all.Items[i])
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	p, err := placement.New(ctx, placement.Options{Cache: snap, Client: cs, Informers: factory})
	if err != nil {
		return nil, fmt.Errorf("kube-scheduler's plugins: %w", err)
	}
	go func() { _ = p.Start(ctx) }()
	noPolicy := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "recheck"}}
	var out []Breach
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName == "" {
			continue
		}
		snap.DeletePod(pod.UID)
		unbound := pod.DeepCopy()
		unbound.Spec.NodeName = ""
		p.Lock()
		_, st := p.Check(ctx, unbound, noPolicy, pod.Spec.NodeName)
		p.Unlock()
		if !st.IsSuccess() {
			out = append(out, Breach{Pod: pod.Namespace + "/" + pod.Name, Node: pod.Spec.NodeName, Message: st.Message()})
		}
		snap.UpsertPod(pod)
	}
	return out, nil
}
