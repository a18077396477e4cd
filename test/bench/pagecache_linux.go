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
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// evictPageCache drops a contender's binary from the page cache before the
// contender starts, so that every contender maps its binary from the same
// state. Peak RSS counts the binary's pages a process maps, and how many a
// fault maps depends on how the file got into the cache: on this kernel a
// binary just written by `go build` was mapped in larger pieces than one
// read back from disk, 8–10 MiB more RSS for the same process
// (docs/benchmarks.md, "The binary's pages in the page cache"). Written
// pages are flushed first: the kernel does not drop dirty ones.
func evictPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("flushing %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("dropping %s from the page cache: %w", path, err)
	}
	return nil
}
