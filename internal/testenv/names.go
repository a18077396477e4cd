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
	"fmt"
	"sync/atomic"
)

var nameSeq atomic.Int64

// Uniq names an object apart from every other named in this test process:
// the prefix and a number counted across the process. An envtest package
// reuses its API server across go test -count=N runs, so fixed names would
// collide with the objects of an earlier run.
func Uniq(prefix string) string { return fmt.Sprintf("%s-%d", prefix, nameSeq.Add(1)) }
