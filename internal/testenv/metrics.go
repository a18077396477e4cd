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
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ProcessCPU reads process_cpu_seconds_total from a Prometheus text page
// (the /metrics of kube-apiserver or etcd): the CPU the process has used. A
// page without the metric is an error, not a zero.
func ProcessCPU(page []byte) (time.Duration, error) {
	f, ok, err := Metric(page, "process_cpu_seconds_total")
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, errors.New("no process_cpu_seconds_total on the metrics page")
	}
	return time.Duration(f * float64(time.Second)), nil
}

// Metric returns the value of the first sample of name on a Prometheus
// text page (a sample with labels counts: name{...} value).
func Metric(page []byte, name string) (float64, bool, error) {
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok || (!strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "{")) {
			continue
		}
		f := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, false, fmt.Errorf("parsing %s %q: %w", name, f[0], err)
		}
		return v, true, nil
	}
	return 0, false, nil
}

// Get reads a page (a /metrics or /debug/pprof page) over plain HTTP. An
// answer other than 200 is an error naming the URL.
func Get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
