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

package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/controllers"
)

// TestPolicyMissingSigningSecret: a policy whose signing Secret (or key)
// does not exist is not Ready, and the message names the field and the
// Secret; once the Secret exists the policy turns Ready by itself.
func TestPolicyMissingSigningSecret(t *testing.T) {
	t.Cleanup(controllers.SetSecretMissingRecheck(200 * time.Millisecond))
	w := newHookEnv(t)
	rec := newReceiver(t, nil)
	absent, keyless := uniq("absent"), uniq("keyless")
	if err := env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: keyless}, Data: map[string][]byte{"other": []byte("x")},
	}); err != nil {
		t.Fatal(err)
	}
	hook := func(name, secret string) bindgatev1alpha1.PostBindWebhook {
		h := rec.hook(name, 3)
		h.SigningSecretRef = &bindgatev1alpha1.SecretKeyRef{Name: secret, Key: "key"}
		return h
	}
	missing, wrongKey := uniq("nosecret"), uniq("nokey")
	pool(t, missing, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.PostBind = []bindgatev1alpha1.PostBindWebhook{rec.hook("audit", 3), hook("tracker", absent)}
	})
	pool(t, wrongKey, func(p *bindgatev1alpha1.BindingPolicy) {
		p.Spec.PostBind = []bindgatev1alpha1.PostBindWebhook{hook("tracker", keyless)}
	})
	w.start(t)
	ready := func(name string) *metav1.Condition {
		return meta.FindStatusCondition(getPolicy(t, name).Status.Conditions, bindgatev1alpha1.ConditionReady)
	}
	for name, want := range map[string]string{
		missing:  "spec.postBind[1] (tracker): signingSecretRef: Secret " + w.ns + "/" + absent + " not found",
		wrongKey: "spec.postBind[0] (tracker): signingSecretRef: Secret " + w.ns + "/" + keyless + ", key key: secret has no key \"key\"",
	} {
		eventually(t, 10*time.Second, "Ready=False MissingSecret on "+name, func() (bool, error) {
			c := ready(name)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == bindgatev1alpha1.ReasonMissingSecret && strings.Contains(c.Message, want), nil
		})
	}
	// Creating the Secret is enough: no edit to the policy.
	if err := env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: absent}, Data: map[string][]byte{"key": []byte(hookSecret)},
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "Ready=True once the Secret exists", func() (bool, error) {
		c := ready(missing)
		return c != nil && c.Status == metav1.ConditionTrue, nil
	})
}
