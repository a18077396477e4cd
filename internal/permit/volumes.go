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
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bindgate/bindgate/internal/framework"
)

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch

// AnnSelectedNode is the claim annotation that tells a WaitForFirstConsumer
// provisioner where the consumer runs (kube-scheduler's volume binding sets
// it the same way).
const AnnSelectedNode = "volume.kubernetes.io/selected-node"

// claimNames are the PersistentVolumeClaims pod's volumes name.
func claimNames(pod *corev1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// ClaimNames are the PersistentVolumeClaims pod's volumes name (the pod
// controller requeues waiting pods when one of them changes).
func ClaimNames(pod *corev1.Pod) []string { return claimNames(pod) }

// seenClaims remembers the claims a pod's volumes condition found, so that
// one deleted afterwards is told apart from one not created yet.
type seenClaims struct {
	claims map[string]bool
	at     time.Time
}

// Volumes is the permit plugin of the volumes condition: every claim of the
// pod must be Bound. An unbound claim of a WaitForFirstConsumer class is
// given the reserved node (the selected-node annotation) and waited for; a
// missing claim is waited for; a claim that disappears (or is Lost) while
// the pod waits rejects the pod.
type Volumes struct {
	b    *Builder
	name string
}

var _ framework.PermitPlugin = (*Volumes)(nil)

// Name is the condition's name.
func (v *Volumes) Name() string { return v.name }

// Permit checks each claim of the pod.
func (v *Volumes) Permit(ctx context.Context, _ *framework.CycleState, pod *corev1.Pod, node *corev1.Node) (*framework.Status, time.Duration) {
	claims := claimNames(pod)
	if len(claims) == 0 {
		return nil, 0
	}
	if v.b.Client == nil {
		return framework.NewStatus(framework.Wait, "no API client configured"), RecheckAfter
	}
	var pending []string
	for _, name := range claims {
		pvc := &corev1.PersistentVolumeClaim{}
		err := v.b.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, pvc)
		switch {
		case apierrors.IsNotFound(err):
			if v.saw(pod.UID, name) {
				return framework.NewStatus(framework.Unschedulable, fmt.Sprintf("claim %s lost (deleted while the pod waited)", name)), 0
			}
			pending = append(pending, name+" not found")
			continue
		case err != nil:
			pending = append(pending, fmt.Sprintf("reading claim %s: %v", name, err))
			continue
		}
		v.see(pod.UID, name)
		if pvc.DeletionTimestamp != nil || pvc.Status.Phase == corev1.ClaimLost {
			return framework.NewStatus(framework.Unschedulable, fmt.Sprintf("claim %s lost", name)), 0
		}
		if pvc.Status.Phase == corev1.ClaimBound {
			if ok, why := v.reachable(ctx, pvc, node); !ok {
				return framework.NewStatus(framework.Unschedulable, why), 0
			}
			continue
		}
		if wffc, err := v.waitForFirstConsumer(ctx, pvc); err != nil {
			pending = append(pending, err.Error())
			continue
		} else if wffc && pvc.Annotations[AnnSelectedNode] != node.Name {
			patch := client.MergeFrom(pvc.DeepCopy())
			if pvc.Annotations == nil {
				pvc.Annotations = map[string]string{}
			}
			pvc.Annotations[AnnSelectedNode] = node.Name
			if err := v.b.Client.Patch(ctx, pvc, patch); err != nil {
				pending = append(pending, fmt.Sprintf("annotating claim %s: %v", name, err))
				continue
			}
		}
		pending = append(pending, name+" not bound")
	}
	if len(pending) > 0 {
		return framework.NewStatus(framework.Wait, strings.Join(pending, "; ")), RecheckAfter
	}
	v.forget(pod.UID)
	return nil, 0
}

func (v *Volumes) waitForFirstConsumer(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return false, nil
	}
	sc := &storagev1.StorageClass{}
	if err := v.b.Client.Get(ctx, types.NamespacedName{Name: *pvc.Spec.StorageClassName}, sc); err != nil {
		return false, fmt.Errorf("reading StorageClass %s of claim %s: %w", *pvc.Spec.StorageClassName, pvc.Name, err)
	}
	return sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer, nil
}

// reachable says whether the volume bound to pvc may be used from node.
func (v *Volumes) reachable(ctx context.Context, pvc *corev1.PersistentVolumeClaim, node *corev1.Node) (bool, string) {
	ok, err := volumeReachable(ctx, v.b.Client, pvc, node)
	if err != nil {
		return true, "" // unknown: the bind goes on, as kube-scheduler's would
	}
	if !ok {
		return false, fmt.Sprintf("claim %s is bound to volume %s, whose node affinity excludes node %s", pvc.Name, pvc.Spec.VolumeName, node.Name)
	}
	return true, ""
}

func volumeReachable(ctx context.Context, c client.Reader, pvc *corev1.PersistentVolumeClaim, node *corev1.Node) (bool, error) {
	if pvc.Spec.VolumeName == "" {
		return true, nil
	}
	pv := &corev1.PersistentVolume{}
	if err := c.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return false, fmt.Errorf("reading volume %s: %w", pvc.Spec.VolumeName, err)
	}
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return true, nil
	}
	ok, err := corev1helpers.MatchNodeSelectorTerms(node, pv.Spec.NodeAffinity.Required)
	if err != nil {
		return false, fmt.Errorf("evaluating the node affinity of volume %s: %w", pv.Name, err)
	}
	return ok, nil
}

func (v *Volumes) saw(uid types.UID, claim string) bool {
	v.b.mu.Lock()
	defer v.b.mu.Unlock()
	s := v.b.seen[uid]
	return s != nil && s.claims[claim]
}

func (v *Volumes) see(uid types.UID, claim string) {
	v.b.mu.Lock()
	defer v.b.mu.Unlock()
	now := time.Now()
	if v.b.seen == nil {
		v.b.seen = map[types.UID]*seenClaims{}
	}
	s := v.b.seen[uid]
	if s == nil {
		s = &seenClaims{claims: map[string]bool{}}
		v.b.seen[uid] = s
		for k, old := range v.b.seen {
			if now.Sub(old.at) > forgetAfter {
				delete(v.b.seen, k)
			}
		}
	}
	s.claims[claim], s.at = true, now
}

func (v *Volumes) forget(uid types.UID) {
	v.b.mu.Lock()
	defer v.b.mu.Unlock()
	delete(v.b.seen, uid)
}
