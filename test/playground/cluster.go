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

package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/testenv"
)

// kwokStages are kwok's default stages: kwok's binary ships none.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

type controlPlane struct {
	env        *envtest.Environment
	cfg        *rest.Config
	cs         kubernetes.Interface
	cl         client.Client
	kubeconfig string
}

// startControlPlane starts etcd and kube-apiserver from bin on free loopback
// ports with the CRDs installed, and writes an admin kubeconfig into dir.
func startControlPlane(bin, dir string) (*controlPlane, error) {
	env := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     []string{filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	api := env.ControlPlane.GetAPIServer()
	// Nodes start without the node.kubernetes.io/not-ready taint; kwok
	// reports them Ready.
	api.Configure().Append("disable-admission-plugins", "TaintNodesByCondition")
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	cp := &controlPlane{env: env, cfg: cfg}
	fail := func(err error) (*controlPlane, error) { _ = env.Stop(); return nil, err }
	if cp.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return fail(err)
	}
	if cp.cl, err = client.New(cfg, client.Options{Scheme: testenv.Scheme()}); err != nil {
		return fail(err)
	}
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "playground-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fail(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return fail(err)
	}
	cp.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cp.kubeconfig, kc, 0o600); err != nil {
		return fail(err)
	}
	return cp, nil
}

func (cp *controlPlane) stop() error { return cp.env.Stop() }

// createNodes creates n nodes for kwok: the first half in pool=batch,
// tainted dedicated=batch:NoSchedule, the rest in pool=general.
func createNodes(ctx context.Context, cs kubernetes.Interface, n int) error {
	nb := batchNodes(n)
	for i := range n {
		pool, name := batchPool, fmt.Sprintf("batch-%02d", i+1)
		if i >= nb {
			pool, name = generalPool, fmt.Sprintf("general-%02d", i-nb+1)
		}
		res := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("8"),
			corev1.ResourceMemory: resource.MustParse("32Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				Labels: map[string]string{
					corev1.LabelHostname:           name,
					corev1.LabelOSStable:           "linux",
					corev1.LabelArchStable:         "amd64",
					corev1.LabelInstanceTypeStable: "m5.2xlarge",
					corev1.LabelTopologyZone:       fmt.Sprintf("zone-%c", 'a'+i%3),
					"type":                         "kwok",
					poolLabel:                      pool,
				},
				Annotations: map[string]string{kwokAnnotation: "fake"},
			},
			Status: corev1.NodeStatus{
				Allocatable: res,
				Capacity:    res,
				// No conditions: kwok's node-initialize stage reports Ready.
			},
		}
		if pool == generalPool {
			// The training-gangs sample policy places gangs on GPU nodes.
			node.Labels[gpuLabel] = "true"
		}
		if pool == batchPool {
			node.Spec.Taints = []corev1.Taint{{Key: taintKey, Value: batchPool, Effect: corev1.TaintEffectNoSchedule}}
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// waitNodesManaged waits until kwok has initialized every node (it fills in
// nodeInfo and the kubelet endpoint).
func waitNodesManaged(ctx context.Context, cs kubernetes.Interface, n int, kwok *child) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return poll(ctx, 200*time.Millisecond, func() (bool, error) {
		select {
		case <-kwok.done:
			return false, kwok.exitErr()
		default:
		}
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // the API server may be busy; retry
		}
		managed := 0
		for _, nd := range nodes.Items {
			if nd.Status.NodeInfo.KubeletVersion != "" {
				managed++
			}
		}
		return managed >= n, nil
	})
}

// applySamples creates every BindingPolicy in dir's YAML files.
func applySamples(ctx context.Context, cl client.Client, dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var bp bindgatev1alpha1.BindingPolicy
			if err := dec.Decode(&bp); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if bp.Name == "" {
				continue
			}
			if err := cl.Create(ctx, &bp); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			names = append(names, bp.Name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// child is a process started in its own process group, so that stopping it
// stops everything it started, and so that a terminal's Ctrl-C reaches only
// the playground, which then stops the children in order.
type child struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func (p *playground) startChild(ctx context.Context, name, path string, args ...string) (*child, error) {
	logPath := filepath.Join(p.dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// Not ctx: the children must outlive an interrupt until teardown stops
	// them in order.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		_ = logf.Close()
		close(c.done)
	}()
	p.children = append(p.children, c)
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// exitErr describes a child that exited (call after done is closed).
func (c *child) exitErr() error {
	logTail := tail(c.log, 10)
	if c.err == nil {
		return fmt.Errorf("%s exited; last lines of its log:\n%s", c.name, logTail)
	}
	return fmt.Errorf("%s exited (%w); last lines of its log:\n%s", c.name, c.err, logTail)
}

// stop sends SIGTERM to the child's process group, waits up to 10s, then
// sends SIGKILL to the group.
func (c *child) stop() {
	pgid := c.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-c.done
	}
	// Anything the child left behind in its group.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// freeAddr returns a free loopback address (host:port).
func freeAddr() (string, error) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// waitReady waits until url answers 200 or the child exits.
func waitReady(ctx context.Context, url string, c *child) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return poll(ctx, 200*time.Millisecond, func() (bool, error) {
		select {
		case <-c.done:
			return false, c.exitErr()
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
