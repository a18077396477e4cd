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
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident counts the pages of path that are in the page cache.
func resident(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(mem) }()
	page := os.Getpagesize()
	vec := make([]byte, (len(mem)+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func TestEvictPageCache(t *testing.T) {
	// A file just written, as a binary by go build: all of it cached, dirty.
	// It lives beside the test, on the disk the repository is on, not in
	// TMPDIR, which may be a tmpfs whose pages cannot be dropped.
	dir, err := os.MkdirTemp(".", "pagecache-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "binary")
	const size = 8 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	pages := size / os.Getpagesize()
	if got := resident(t, path); got < pages/2 {
		t.Fatalf("only %d of %d pages of a file just written are cached: the test cannot tell an eviction", got, pages)
	}
	if err := evictPageCache(path); err != nil {
		t.Fatal(err)
	}
	if got := resident(t, path); got > pages/10 {
		t.Errorf("after evictPageCache, %d of %d pages are still cached (a tmpfs keeps them: is the repository on one?)", got, pages)
	}
	if err := evictPageCache(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("evictPageCache of a missing file: no error")
	}
}
