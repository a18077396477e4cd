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

package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const restartableDirPrefix = "bindgate-apiserver-"

// WithRestartableAPIServer keeps the API server's certificates (serving
// and client CA) and its port in a directory of the Env's own, so that
// RestartAPIServer brings it back with the same ones: envtest generates new
// ones on every start when it made the directory itself, which would break
// every client of the first.
func WithRestartableAPIServer() Option {
	return func(env *envtest.Environment) {
		dir, err := os.MkdirTemp("", restartableDirPrefix)
		if err != nil {
			panic(fmt.Sprintf("creating the API server's certificate directory: %v", err))
		}
		api := env.ControlPlane.GetAPIServer()
		api.CertDir = dir
		// A restart waits this long after SIGTERM, then kills (as a
		// kubelet does after the grace period).
		api.StopTimeout = 10 * time.Second
	}
}

func (e *Env) restartableDir() (string, error) {
	dir := e.env.ControlPlane.GetAPIServer().CertDir
	if !strings.HasPrefix(filepath.Base(dir), restartableDirPrefix) {
		return "", errors.New("the API server was not started WithRestartableAPIServer")
	}
	return dir, nil
}

// RestartAPIServer stops kube-apiserver (SIGTERM, as a rolling restart
// does) and starts it again on the same port with the same certificates
// and the same etcd. It returns once the new one is healthy.
func (e *Env) RestartAPIServer() error {
	dir, err := e.restartableDir()
	if err != nil {
		return err
	}
	api := e.env.ControlPlane.GetAPIServer()
	// A stop that times out has killed the process (SIGKILL) without
	// waiting for it: wait until its port is free and the process is gone
	// (a later SignalAPIServer must not find the old one).
	stopErr := api.Stop()
	addr := net.JoinHostPort(api.Address, api.Port)
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return true, nil
		}
		_ = c.Close()
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w; it still listens on %s", errors.Join(stopErr, err), addr)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := findProcess("--cert-dir=" + dir)
		return err != nil, nil
	})
	if err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w; the process is still there", errors.Join(stopErr, err))
	}
	if err := api.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// SignalAPIServer sends sig to the kube-apiserver process (SIGSTOP then
// SIGCONT freezes it: connections stay open, nothing answers).
func (e *Env) SignalAPIServer(sig syscall.Signal) error {
	dir, err := e.restartableDir()
	if err != nil {
		return err
	}
	pid, err := findProcess("--cert-dir=" + dir)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return err
	}
	if sig != syscall.SIGSTOP {
		return nil
	}
	// A stop takes effect on each of the process's threads as it next
	// enters the kernel; until all have, a request may still be answered.
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return processStopped(pid)
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver (pid %d) did not stop: %w", pid, err)
	}
	return nil
}

// processStopped says whether every thread of process pid is stopped (state
// T in /proc/PID/task/TID/stat).
func processStopped(pid int) (bool, error) {
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		return false, fmt.Errorf("listing the threads of %d: %w", pid, err)
	}
	for _, t := range tasks {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", t.Name(), "stat"))
		if err != nil {
			continue // the thread ended
		}
		// pid (comm) state ...: comm may hold spaces, the state follows the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return false, fmt.Errorf("reading the state of thread %s: %q", t.Name(), stat)
		}
		if st := stat[i+2]; st != 'T' && st != 't' {
			return false, nil
		}
	}
	return true, nil
}

// findProcess returns the process whose command line has arg.
func findProcess(arg string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("listing processes: %w", err)
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range bytes.Split(cmdline, []byte{0}) {
			if string(a) == arg {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process has %s", arg)
}
