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
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// uniq names an object apart from every other of the test process.
var uniq = testenv.Uniq

func gate(name string) corev1.PodSchedulingGate { return corev1.PodSchedulingGate{Name: name} }

// TestUngate runs both ungate methods against the real API server:
// bindgate's gate goes, other gates and the pod's own nodeSelector and
// annotations stay, the pin is added unless the pod names bindgate as its
// scheduler.
func TestUngate(t *testing.T) {
	ctx := context.Background()
	key := []byte("ungate-test-key")
	UseSealKey(key)
	t.Cleanup(func() { UseSealKey(nil) })
	ns := uniq("ungate")
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	type want struct {
		Gates        []corev1.PodSchedulingGate
		NodeSelector map[string]string
		Annotations  map[string]string
	}
	labelled := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{HostnameLabel: "host-a"}}}
	bare := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}
	cases := map[string]struct {
		gates         []corev1.PodSchedulingGate
		nodeSelector  map[string]string
		schedulerName string
		node          *corev1.Node
		want          want
	}{
		"only bindgate's gate": {
			gates: []corev1.PodSchedulingGate{gate(bindgatev1alpha1.SchedulingGate)}, node: labelled,
			want: want{NodeSelector: map[string]string{HostnameLabel: "host-a"}},
		},
		"other gates stay in order": {
			gates: []corev1.PodSchedulingGate{gate("example.com/a"), gate(bindgatev1alpha1.SchedulingGate), gate("example.com/b")}, node: labelled,
			want: want{Gates: []corev1.PodSchedulingGate{gate("example.com/a"), gate("example.com/b")}, NodeSelector: map[string]string{HostnameLabel: "host-a"}},
		},
		"own nodeSelector kept": {
			gates: []corev1.PodSchedulingGate{gate(bindgatev1alpha1.SchedulingGate)}, nodeSelector: map[string]string{"pool": "batch"}, node: labelled,
			want: want{NodeSelector: map[string]string{"pool": "batch", HostnameLabel: "host-a"}},
		},
		"node without hostname label pins its name": {
			gates: []corev1.PodSchedulingGate{gate(bindgatev1alpha1.SchedulingGate)}, node: bare,
			want: want{NodeSelector: map[string]string{HostnameLabel: "node-b"}},
		},
		"schedulerName bindgate is not pinned": {
			gates: []corev1.PodSchedulingGate{gate(bindgatev1alpha1.SchedulingGate)}, schedulerName: bindgatev1alpha1.SchedulerName, node: labelled,
			want: want{},
		},
	}
	i := 0
	for _, method := range []Method{ByPatch, ByUpdate} {
		for name, tc := range cases {
			t.Run(method.String()+"/"+name, func(t *testing.T) {
				i++
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%d", i), Annotations: map[string]string{"team": "x"}},
					Spec: corev1.PodSpec{SchedulingGates: tc.gates, NodeSelector: tc.nodeSelector, SchedulerName: tc.schedulerName,
						Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
				}
				if err := env.Client.Create(ctx, pod); err != nil {
					t.Fatal(err)
				}
				if err := Ungate(ctx, env.Client, pod, tc.node, "p1", method); err != nil {
					t.Fatal(err)
				}
				got := &corev1.Pod{}
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
					t.Fatal(err)
				}
				tc.want.Annotations = map[string]string{
					"team": "x", bindgatev1alpha1.PolicyAnnotation: "p1", bindgatev1alpha1.SealAnnotation: sealWith(key, pod.UID, "p1"),
				}
				gotWant := want{Gates: got.Spec.SchedulingGates, NodeSelector: got.Spec.NodeSelector, Annotations: got.Annotations}
				if diff := cmp.Diff(tc.want, gotWant); diff != "" {
					t.Errorf("pod after Ungate (-want +got):\n%s", diff)
				}
				if got.ResourceVersion != pod.ResourceVersion {
					t.Errorf("pod not updated in place: resourceVersion %s, API server has %s", pod.ResourceVersion, got.ResourceVersion)
				}
			})
		}
	}
}

// TestUngateConflict: both methods are optimistic-locked, so a pod changed
// since it was read is not ungated, the caller gets a Conflict and its copy
// of the pod is left as it was.
func TestUngateConflict(t *testing.T) {
	ctx := context.Background()
	ns := uniq("conflict")
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for _, method := range []Method{ByPatch, ByUpdate} {
		t.Run(method.String(), func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pod-" + method.String()},
				Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{gate(bindgatev1alpha1.SchedulingGate)},
					Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
			}
			if err := env.Client.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			stale := pod.DeepCopy()
			pod.Labels = map[string]string{"changed": "yes"}
			if err := env.Client.Update(ctx, pod); err != nil {
				t.Fatal(err)
			}
			before := stale.DeepCopy()
			err := Ungate(ctx, env.Client, stale, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, "p1", method)
			if !apierrors.IsConflict(err) {
				t.Fatalf("Ungate of a stale pod: got %v, want a Conflict", err)
			}
			if method == ByUpdate {
				// A patch's failed answer is decoded into nothing either;
				// the update must not leave its edits behind.
				if diff := cmp.Diff(before, stale); diff != "" {
					t.Errorf("a refused update changed the caller's pod (-before +after):\n%s", diff)
				}
			}
			got := &corev1.Pod{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
				t.Fatal(err)
			}
			if !HasGate(got) || got.Spec.NodeSelector != nil {
				t.Errorf("a refused write changed the pod: gates %v, nodeSelector %v", got.Spec.SchedulingGates, got.Spec.NodeSelector)
			}
		})
	}
}

// TestMethodFor: an update only against API servers not newer than the
// compiled-in types; a patch when the server's version is unknown.
func TestMethodFor(t *testing.T) {
	cases := map[string]struct {
		server *version.Info
		want   Method
	}{
		"same minor":             {server: &version.Info{GitVersion: fmt.Sprintf("v1.%d.2", CompiledAPIMinor)}, want: ByUpdate},
		"older server":           {server: &version.Info{GitVersion: fmt.Sprintf("v1.%d.0", CompiledAPIMinor-2)}, want: ByUpdate},
		"vendor suffix":          {server: &version.Info{GitVersion: fmt.Sprintf("v1.%d.4-eks-1a2b3c", CompiledAPIMinor)}, want: ByUpdate},
		"newer server":           {server: &version.Info{GitVersion: fmt.Sprintf("v1.%d.0", CompiledAPIMinor+1)}, want: ByPatch},
		"unknown server version": {server: &version.Info{}, want: ByPatch},
		"no server answer":       {server: nil, want: ByPatch},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := MethodFor(tc.server); got != tc.want {
				t.Errorf("MethodFor(%v) = %v, want %v", tc.server, got, tc.want)
			}
		})
	}
}

// TestCompiledAPIMinorMatchesGoMod: CompiledAPIMinor names the k8s.io/api
// version go.mod requires, so a bump of the types updates it too.
func TestCompiledAPIMinorMatchesGoMod(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[0] == "k8s.io/api" {
			want := fmt.Sprintf("v0.%d.", CompiledAPIMinor)
			if !strings.HasPrefix(fields[1], want) {
				t.Errorf("go.mod requires k8s.io/api %s; CompiledAPIMinor = %d says %sx", fields[1], CompiledAPIMinor, want)
			}
			return
		}
	}
	t.Error("go.mod does not require k8s.io/api")
}

// BenchmarkUngate measures what lifting the gate costs the API server, per
// method: b.N gated pods are ungated by 16 workers and the kube-apiserver's
// process_cpu_seconds_total is read before and after. Each method gets an
// API server of its own (on a shared one the later method pays for the
// objects the earlier one left). Reproduce with
//
//	go test -run '^$' -bench Ungate -benchtime 1500x -count 3 ./internal/bind/
func BenchmarkUngate(b *testing.B) {
	// Without a logger controller-runtime prints a warning into the
	// benchmark's result lines.
	ctrllog.SetLogger(logr.Discard())
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{HostnameLabel: "n1"}}}
	for _, method := range []Method{ByPatch, ByUpdate} {
		b.Run(method.String(), func(b *testing.B) {
			fresh, err := testenv.Start()
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = fresh.Stop() }()
			const ns = "bench"
			if err := fresh.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				b.Fatal(err)
			}
			pods := make([]*corev1.Pod, b.N)
			for i := range pods {
				pods[i] = &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%d", i), Labels: map[string]string{"app": "bench"}},
					Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{gate(bindgatev1alpha1.SchedulingGate)},
						Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
						}}}},
				}
				if err := fresh.Client.Create(ctx, pods[i]); err != nil {
					b.Fatal(err)
				}
			}
			before := apiServerCPU(b, fresh)
			b.ResetTimer()
			work := make(chan *corev1.Pod)
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					for p := range work {
						if err := Ungate(ctx, fresh.Client, p, node, "p1", method); err != nil {
							b.Error(err)
						}
					}
				})
			}
			for _, p := range pods {
				work <- p
			}
			close(work)
			wg.Wait()
			b.StopTimer()
			b.ReportMetric((apiServerCPU(b, fresh)-before)*1000/float64(b.N), "apiserver-ms/op")
		})
	}
}

// apiServerCPU reads the kube-apiserver's process_cpu_seconds_total in
// seconds.
func apiServerCPU(b *testing.B, e *testenv.Env) float64 {
	raw, err := e.Clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	d, err := testenv.ProcessCPU(raw)
	if err != nil {
		b.Fatal(err)
	}
	return d.Seconds()
}
