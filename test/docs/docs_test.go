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

// Package docs_test checks the commands the README and docs/*.md show: a
// reader can run each with what this repository builds.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bindgate/bindgate/internal/testenv"
)

// command is one command line shown in a document.
type command struct {
	where string // file:line
	words []string
}

var (
	fence      = regexp.MustCompile("^\\s*```(\\w*)\\s*$")
	inlineCode = regexp.MustCompile("`((?:make|kubectl|helm) [^`]+)`")
	makeTarget = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*):`)
	// pipeline splits a shell line into its commands.
	pipeline    = regexp.MustCompile(`\s*(?:&&|\|\||\||;)\s*`)
	commandWord = regexp.MustCompile(`^[a-z][a-z0-9./-]*$`)
)

// shellLanguages are the fences whose lines are commands; `text` blocks
// hold transcripts, whose command lines start with a tool name too.
var shellLanguages = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true, "text": true, "": true}

// tools a document may start a command with: the binaries `make` builds
// into bin/, make itself, and the ordinary shell and Go tools.
var tools = map[string]bool{
	"make": true, "kubectl": true, "helm": true,
	"go": true, "git": true, "curl": true, "export": true, "cd": true, "echo": true,
}

// builtins are the subcommands of kubectl and helm the docs may use (no
// plugins but the repository's own, kubectl bindgate: nothing the
// repository does not build).
var builtins = map[string]map[string]bool{
	"kubectl": set("get", "apply", "annotate", "label", "delete", "create", "explain", "kustomize", "diff",
		"describe", "logs", "edit", "patch", "rollout", "wait", "cordon", "uncordon", "drain", "config", "version", "api-resources"),
	"helm": set("install", "upgrade", "uninstall", "template", "lint", "list", "status", "get", "show"),
}

func set(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, v := range s {
		m[v] = true
	}
	return m
}

// commands extracts the command lines of a Markdown file: lines of shell
// code blocks that start with a command word (after an optional "$ "
// prompt), and inline code spans that start with make, kubectl or helm.
func commands(t *testing.T, path string) []command {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(testenv.RepoRoot(), path)
	var out []command
	inBlock, shell := false, false
	for i, line := range strings.Split(string(data), "\n") {
		where := rel + ":" + strconv.Itoa(i+1)
		if m := fence.FindStringSubmatch(line); m != nil {
			inBlock = !inBlock
			shell = inBlock && shellLanguages[m[1]]
			continue
		}
		if inBlock {
			if !shell {
				continue
			}
			l := strings.TrimPrefix(strings.TrimSpace(line), "$ ")
			if c, _, _ := strings.Cut(l, "#"); strings.TrimSpace(c) != "" {
				l = c
			}
			for _, part := range pipeline.Split(strings.TrimSuffix(strings.TrimSpace(l), "\\"), -1) {
				// Only parts that look like commands: a lower-case word
				// first (transcripts also hold output like "[ 13.4s] ...").
				words := fields(part)
				if len(words) > 0 && commandWord.MatchString(words[0]) && isCommand(words[0]) {
					out = append(out, command{where: where, words: words})
				}
			}
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
			out = append(out, command{where: where, words: fields(m[1])})
		}
	}
	return out
}

// isCommand tells command words from output: a known tool, a path into
// bin/, or a word that is not a tool the repository provides.
func isCommand(w string) bool {
	switch {
	case tools[w], strings.HasPrefix(w, "bin/"):
		return true
	}
	for _, notBuilt := range []string{"kustomize", "kind", "minikube", "k3d", "kubebuilder", "operator-sdk", "controller-gen", "etcd", "kube-apiserver", "kwok", "docker", "jq", "yq"} {
		if w == notBuilt {
			return true
		}
	}
	return false
}

// fields splits a command line as a shell does for plain words and
// single- or double-quoted ones.
func fields(line string) []string {
	var out []string
	var cur strings.Builder
	quote, inWord := rune(0), false
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// TestDocsUseOnlyWhatTheRepoBuilds: every kubectl, make and helm command in
// README.md and docs/*.md refers to a Makefile target or a binary the
// Makefile builds, and to files that exist.
func TestDocsUseOnlyWhatTheRepoBuilds(t *testing.T) {
	root := testenv.RepoRoot()
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, line := range strings.Split(string(makefile), "\n") {
		if m := makeTarget.FindStringSubmatch(line); m != nil && !strings.Contains(line, ":=") && !strings.Contains(line, "?=") {
			targets[m[1]] = true
		}
	}
	for _, tool := range []string{"kubectl", "helm"} {
		if !strings.Contains(string(makefile), "-o $(LOCALBIN)/"+tool+" ") {
			t.Fatalf("the Makefile does not build bin/%s", tool)
		}
	}

	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	n := 0
	for _, f := range files {
		for _, c := range commands(t, f) {
			n++
			tool, args := c.words[0], c.words[1:]
			switch {
			case strings.HasPrefix(tool, "bin/"):
				if !strings.Contains(string(makefile), "$(LOCALBIN)/"+strings.TrimPrefix(tool, "bin/")) {
					t.Errorf("%s: %s is not built by the Makefile", c.where, tool)
				}
			case !tools[tool]:
				t.Errorf("%s: %q uses %s, which the repository does not build (%s)", c.where, strings.Join(c.words, " "), tool, "make help lists what it does")
			case tool == "make":
				for _, a := range args {
					if strings.Contains(a, "=") || strings.HasPrefix(a, "-") {
						continue
					}
					if !targets[a] {
						t.Errorf("%s: make %s: no such target in the Makefile", c.where, a)
					}
				}
			case builtins[tool] != nil:
				sub := ""
				for i := 0; i < len(args); i++ {
					a := args[i]
					if a == "--kubeconfig" || a == "-n" || a == "--namespace" {
						i++ // its value
						continue
					}
					if !strings.HasPrefix(a, "-") {
						sub = a
						break
					}
				}
				if tool == "kubectl" && sub == "bindgate" {
					// The repository's own plugin: make install-plugin
					// puts bin/bindgate on PATH as kubectl-bindgate.
					if !targets["install-plugin"] || !strings.Contains(string(makefile), "$(PLUGIN_DIR)/kubectl-bindgate") {
						t.Errorf("%s: kubectl bindgate: the Makefile does not install the kubectl-bindgate plugin", c.where)
					}
				} else if !builtins[tool][sub] {
					t.Errorf("%s: %s %s: not a built-in %s command", c.where, tool, sub, tool)
				}
			}
			for _, a := range args {
				if strings.HasPrefix(a, "config/") {
					if _, err := os.Stat(filepath.Join(root, a)); err != nil {
						t.Errorf("%s: %s: %v", c.where, a, err)
					}
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("found only %d commands in the docs; is the extraction broken?", n)
	}
}
