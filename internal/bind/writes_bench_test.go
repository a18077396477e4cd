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

package bind

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv"
)

// BenchmarkWrites prices, on kube-apiserver and etcd, the writes that bind
// one pod (an op), as bindgate sends them and as the path without bindgate
// sends them, each on a control plane of its own with two pod watches open
// (a scheduler's informer and a client's):
//   - gated/bindgate: Ungate (the gate, the node pin and the sealed policy
//     record in one update), then pods/binding carrying the record;
//   - gated/kube-scheduler: an ungating controller's update that lifts the
//     gate alone, then a bare pods/binding;
//   - schedulerName/bindgate and schedulerName/kube-scheduler: the binding
//     alone, with and without the record.
//
// For the gated path, order says when a pod's two writes go: each (its
// update, then at once its binding, as bindgate's bind goroutines send
// them) or staged (every pod's update first, then every binding, as the
// ungating controller runs ahead of kube-scheduler in the full benchmark).
//
// inflight is how many writers run at once: 64 is bindgate's default
// --bind-concurrency, 512 about what kube-scheduler's unbounded binding
// goroutines reach at 500 nodes. The event every bound pod gets is the same
// for both and left out.
//
//	go test -run '^$' -bench Writes -benchtime 2000x -count 3 ./internal/bind/
func BenchmarkWrites(b *testing.B) {
	ctrllog.SetLogger(logr.Discard())
	UseSealKey([]byte("0123456789abcdef0123456789abcdef"))
	for _, path := range []string{"gated", "schedulerName"} {
		orders := []string{"each"}
		if path == "gated" {
			orders = append(orders, "staged")
		}
		for _, order := range orders {
			for _, sender := range []string{"bindgate", "kube-scheduler"} {
				for _, inflight := range []int{64, 512} {
					b.Run(fmt.Sprintf("path=%s/order=%s/sender=%s/inflight=%d", path, order, sender, inflight), func(b *testing.B) {
						benchmarkWrites(b, path == "gated", sender == "bindgate", order == "staged", inflight)
					})
				}
			}
		}
	}
}

func benchmarkWrites(b *testing.B, gated, bindgate, staged bool, inflight int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := testenv.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Stop() }()
	// Protobuf, as both schedulers' and the ungating controller's clients
	// (e.Client, which Ungate writes with, picks it by itself).
	cfg := rest.CopyConfig(e.Config)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	const ns = "bench"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{HostnameLabel: "n1"}}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	pods := make([]*corev1.Pod, b.N)
	for i := range pods {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%d", i), Labels: map[string]string{"app": "bench"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			}}}},
		}
		if gated {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{gate(bindgatev1alpha1.SchedulingGate)}
		} else {
			p.Spec.SchedulerName = bindgatev1alpha1.SchedulerName
		}
		if pods[i], err = cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for range 2 {
		w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: pods[len(pods)-1].ResourceVersion})
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for range w.ResultChan() {
			}
		}()
	}
	apiBefore, etcdBefore := apiServerCPU(b, e), etcdCPU(b, e)
	b.ResetTimer()
	ungate := func(p *corev1.Pod) {
		switch {
		case gated && bindgate:
			if err := Ungate(ctx, e.Client, p, node, "p1", ByUpdate); err != nil {
				b.Error(err)
			}
		case gated:
			p.Spec.SchedulingGates = slices.DeleteFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
				return g.Name == bindgatev1alpha1.SchedulingGate
			})
			if _, err := cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
				b.Error(err)
			}
		}
	}
	bind := func(p *corev1.Pod) {
		ann := map[string]string{}
		if bindgate {
			recordAnnotations(p.UID, "p1", ann)
		}
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name, UID: p.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node.Name},
		}
		if len(ann) > 0 {
			binding.Annotations = ann
		}
		if err := cs.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			b.Error(err)
		}
	}
	// every runs write for each pod on inflight writers.
	every := func(write func(p *corev1.Pod)) {
		work := make(chan *corev1.Pod)
		var wg sync.WaitGroup
		for range inflight {
			wg.Go(func() {
				for p := range work {
					write(p)
				}
			})
		}
		for _, p := range pods {
			work <- p
		}
		close(work)
		wg.Wait()
	}
	if staged {
		every(ungate)
		every(bind)
	} else {
		every(func(p *corev1.Pod) { ungate(p); bind(p) })
	}
	b.StopTimer()
	b.ReportMetric((apiServerCPU(b, e)-apiBefore)*1000/float64(b.N), "apiserver-ms/op")
	b.ReportMetric((etcdCPU(b, e)-etcdBefore)*1000/float64(b.N), "etcd-ms/op")
	bound, err := cs.CoreV1().Pods(ns).Get(ctx, pods[0].Name, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if bound.Spec.NodeName != node.Name {
		b.Fatalf("pod %s not bound to %s: %q", bound.Name, node.Name, bound.Spec.NodeName)
	}
	b.ReportMetric(float64(bound.Size()), "pod-bytes")
}

// etcdCPU reads etcd's process_cpu_seconds_total in seconds.
func etcdCPU(b *testing.B, e *testenv.Env) float64 {
	raw, err := testenv.Get(context.Background(), e.EtcdURL()+"/metrics")
	if err != nil {
		b.Fatal(err)
	}
	d, err := testenv.ProcessCPU(raw)
	if err != nil {
		b.Fatal(err)
	}
	return d.Seconds()
}
