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

package placement

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	kcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
)

// TestKubeSchedulerDefaultProfileDoesNotBatch pins a parity fact SelectNode
// relies on: kube-scheduler's OpportunisticBatching (on by default since
// v1.35) reuses the previous cycle's sorted nodes only for a pod with a
// signature, and with the default profile no pod has one, because
// PodTopologySpread refuses to sign any pod while the system default
// constraints are set. So kube-scheduler runs every cycle in full, as
// SelectNode does; if a release lets the default profile sign pods, this
// test fails and SelectNode should take the hints too (GetNodeHint and
// StoreScheduleResults) to stay kube-scheduler's equal in placement and
// speed.
func TestKubeSchedulerDefaultProfileDoesNotBatch(t *testing.T) {
	if !utilfeature.DefaultFeatureGate.Enabled(features.OpportunisticBatching) {
		t.Fatal("OpportunisticBatching is off: kube-scheduler's defaults changed, revisit this test")
	}
	// The framework records into kube-scheduler's metric vectors.
	schedmetrics.Register()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		}}}},
	}
	for name, tc := range map[string]struct {
		// listDefaulting turns PodTopologySpread's system defaults off
		// (defaultingType List, no default constraints).
		listDefaulting bool
		wantSigned     bool
	}{
		"default profile: no signature, no batching":                {listDefaulting: false, wantSigned: false},
		"without the system default constraints: the pod is signed": {listDefaulting: true, wantSigned: true},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var versioned configv1.KubeSchedulerConfiguration
			scheme.Scheme.Default(&versioned)
			var cfg config.KubeSchedulerConfiguration
			if err := scheme.Scheme.Convert(&versioned, &cfg, nil); err != nil {
				t.Fatal(err)
			}
			prof := cfg.Profiles[0]
			if tc.listDefaulting {
				for i := range prof.PluginConfig {
					if args, ok := prof.PluginConfig[i].Args.(*config.PodTopologySpreadArgs); ok {
						args.DefaultingType = config.ListDefaulting
						args.DefaultConstraints = nil
					}
				}
			}
			cs := fake.NewClientset()
			factory := informers.NewSharedInformerFactory(cs, 0)
			fw, err := frameworkruntime.NewFramework(ctx, plugins.NewInTreeRegistry(), &prof,
				frameworkruntime.WithClientSet(cs),
				frameworkruntime.WithInformerFactory(factory),
				frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(factory.Storage().V1().CSINodes().Lister())),
				frameworkruntime.WithSnapshotSharedLister(kcache.NewEmptySnapshot()),
			)
			if err != nil {
				t.Fatal(err)
			}
			if got := fw.SignPod(ctx, pod) != nil; got != tc.wantSigned {
				t.Errorf("kube-scheduler's profile signed the pod: %v, want %v", got, tc.wantSigned)
			}
		})
	}
}
