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

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDockerfileBuildContext builds the binary from exactly the files the
// Dockerfile's builder stage copies (no container runtime needed): a source
// file the COPY lines miss fails the build here as it would in the image.
func TestDockerfileBuildContext(t *testing.T) {
	data, err := os.ReadFile(repoPath("Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.TempDir()
	stages := 0
	var build string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			stages++
		case "COPY":
			if stages != 1 || strings.HasPrefix(f[1], "--") {
				continue // a later stage, or COPY --from
			}
			if len(f) < 3 {
				t.Fatalf("Dockerfile: %q: want COPY <src>... <dest>", line)
			}
			for _, src := range f[1 : len(f)-1] {
				copyContext(t, src, filepath.Join(ctx, f[len(f)-1]), strings.HasSuffix(f[len(f)-1], "/") || len(f) > 3)
			}
		case "RUN":
			if strings.Contains(line, "go build") {
				build = line
			}
		}
	}
	if build == "" {
		t.Fatal("the Dockerfile's builder stage runs no go build")
	}
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", filepath.Join(t.TempDir(), "bindgate"), ".")
	cmd.Dir = ctx
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOPROXY=off")
	cmd.WaitDelay = 10 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build in the Dockerfile's build context (%s): %v\n%s", build, err, out)
	}
}

// copyContext copies the repository paths matching src (a glob, as COPY
// takes) to dest: into it when intoDir, else as it.
func copyContext(t *testing.T, src, dest string, intoDir bool) {
	t.Helper()
	matches, err := filepath.Glob(repoPath(src))
	if err != nil || len(matches) == 0 {
		t.Fatalf("Dockerfile: COPY %s matches nothing (%v)", src, err)
	}
	for _, m := range matches {
		to := dest
		info, err := os.Stat(m)
		if err != nil {
			t.Fatal(err)
		}
		if intoDir && !info.IsDir() {
			to = filepath.Join(dest, filepath.Base(m))
		}
		if info.IsDir() {
			// COPY dir/ dest/ copies the directory's contents.
			if err := os.MkdirAll(to, 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.CommandContext(t.Context(), "cp", "-R", m+"/.", to).CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.CommandContext(t.Context(), "cp", m, to).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
}
