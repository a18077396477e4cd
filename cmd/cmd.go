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

// Package cmd holds bindgate's client subcommands (the same binary as the
// operator; installed as kubectl-bindgate it is a kubectl plugin):
//
//	bindgate explain pod NAME [-n NAMESPACE] [--nodes] [-o text|json]
//	bindgate simulate -f POLICY.yaml [--pod POD.yaml] [-o text|json]
//
// They read the cluster and compute with the operator's own code
// (internal/explain); they never write to it.
package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager/signals"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/explain"
	"github.com/bindgate/bindgate/internal/options"
)

// PluginName is the name `make install-plugin` gives the binary: kubectl
// runs it for `kubectl bindgate ...`.
const PluginName = "kubectl-bindgate"

// Handles says whether the process should run a client subcommand instead
// of the operator: it was started as the kubectl plugin, or its first
// argument names a subcommand.
func Handles(args []string) bool {
	if len(args) == 0 {
		return false
	}
	if strings.TrimSuffix(filepath.Base(args[0]), ".exe") == PluginName {
		return true
	}
	if len(args) < 2 {
		return false
	}
	switch args[1] {
	case "explain", "simulate":
		return true
	}
	return false
}

const usage = `Usage:
  bindgate explain pod NAME [-n NAMESPACE] [--nodes] [--top N] [-o text|json]
      Why the pod is where it is: the policy that takes it (and why not the
      others), each node's first refusing plugin grouped by reason, the top
      scores, its reservation, each permit condition's verdict, a timeline.
  bindgate simulate -f POLICY.yaml [--pod POD.yaml] [-o text|json]
      What a policy that is not applied yet (or an edit of an applied one)
      would do with the pending pods it selects, or with the pod in POD.yaml:
      bind to which node, wait for which condition, or why not. Nothing is
      written (the API server checks the policy in a dry run).

Common flags: --kubeconfig, --context, --operator-namespace, --seal-key-secret.
`

// Main runs the subcommand in os.Args and exits. The framework's and the
// client libraries' logs are discarded: the output is the report.
func Main() {
	klog.SetLogger(logr.Discard())
	ctrllog.SetLogger(logr.Discard())
	os.Exit(Run(signals.SetupSignalHandler(), os.Args, os.Stdout, os.Stderr))
}

// Run runs the subcommand in args (args[0] is the program name) and returns
// the exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	rest := args[1:]
	if len(rest) == 0 || rest[0] == "help" || rest[0] == "-h" || rest[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	var err error
	switch rest[0] {
	case "explain":
		err = runExplain(ctx, rest[1:], stdout)
	case "simulate":
		err = runSimulate(ctx, rest[1:], stdout)
	default:
		err = fmt.Errorf("unknown command %q", rest[0])
	}
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "error: %v\n", err)
		if strings.HasPrefix(err.Error(), "unknown command") || errors.Is(err, errUsage) {
			fmt.Fprint(stderr, usage)
		}
		return 1
	}
	return 0
}

var errUsage = errors.New("usage")

// common are the flags every subcommand takes.
type common struct {
	kubeconfig, context, namespace string
	operatorNamespace, sealSecret  string
	output                         string
}

func (c *common) bind(fs *pflag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "Path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config).")
	fs.StringVar(&c.context, "context", "", "The kubeconfig context to use.")
	fs.StringVarP(&c.namespace, "namespace", "n", "", "The namespace (default: the context's).")
	fs.StringVar(&c.operatorNamespace, "operator-namespace", options.DefaultNamespace(), "The operator's namespace, where its seal key Secret is.")
	fs.StringVar(&c.sealSecret, "seal-key-secret", options.DefaultSealKeySecret, "The Secret that holds the operator's seal key.")
	fs.StringVarP(&c.output, "output", "o", "text", "Output format: text or json.")
}

// connect builds the clients and the default namespace from the kubeconfig.
func (c *common) connect() (explain.Options, string, error) {
	if c.output != "text" && c.output != "json" {
		return explain.Options{}, "", fmt.Errorf("--output must be text or json, not %q", c.output)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return explain.Options{}, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns := c.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return explain.Options{}, "", fmt.Errorf("reading the kubeconfig's namespace: %w", err)
		}
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(bindgatev1alpha1.AddToScheme(scheme))
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return explain.Options{}, "", fmt.Errorf("creating a client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return explain.Options{}, "", fmt.Errorf("creating a clientset: %w", err)
	}
	return explain.Options{
		Client: cl, Clientset: cs, OperatorNamespace: c.operatorNamespace, SealKeySecret: c.sealSecret,
		Clock: clock.RealClock{},
	}, ns, nil
}

func runExplain(ctx context.Context, args []string, stdout io.Writer) error {
	var (
		c  common
		eo explain.ExplainOptions
	)
	fs := pflag.NewFlagSet("explain", pflag.ContinueOnError)
	c.bind(fs)
	fs.BoolVar(&eo.AllNodes, "nodes", false, "List every refused node, not only the reasons grouped.")
	fs.IntVar(&eo.Top, "top", 3, "How many feasible nodes' scores to show.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pos := fs.Args()
	if len(pos) != 2 || (pos[0] != "pod" && pos[0] != "pods" && pos[0] != "po") {
		return fmt.Errorf("%w: explain takes `pod NAME`", errUsage)
	}
	opts, ns, err := c.connect()
	if err != nil {
		return err
	}
	r, err := explain.Pod(ctx, opts, ns, pos[1], eo)
	if err != nil {
		return err
	}
	if c.output == "json" {
		return writeJSON(stdout, r)
	}
	return r.WriteText(stdout, opts.Clock.Now())
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runSimulate(ctx context.Context, args []string, stdout io.Writer) error {
	var (
		c             common
		file, podFile string
	)
	fs := pflag.NewFlagSet("simulate", pflag.ContinueOnError)
	c.bind(fs)
	fs.StringVarP(&file, "filename", "f", "", "The BindingPolicy manifest to simulate (- reads standard input).")
	fs.StringVar(&podFile, "pod", "", "A Pod manifest to simulate the policy on, instead of the pending pods it selects.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if file == "" || len(fs.Args()) != 0 {
		return fmt.Errorf("%w: simulate takes -f POLICY.yaml", errUsage)
	}
	data, err := readFile(file)
	if err != nil {
		return err
	}
	pol, err := explain.DecodePolicy(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	opts, ns, err := c.connect()
	if err != nil {
		return err
	}
	var pod *corev1.Pod
	if podFile != "" {
		data, err := readFile(podFile)
		if err != nil {
			return err
		}
		if pod, err = explain.DecodePod(data, ns); err != nil {
			return fmt.Errorf("%s: %w", podFile, err)
		}
	}
	sim, err := explain.Simulate(ctx, opts, pol, pod)
	if err != nil {
		return err
	}
	if c.output == "json" {
		return writeJSON(stdout, sim)
	}
	return sim.WriteText(stdout)
}

func readFile(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(name)
}
