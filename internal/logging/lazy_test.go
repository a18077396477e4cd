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

package logging

import (
	"bytes"
	"testing"

	"github.com/go-logr/zapr"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// TestLazyFieldsWritesWhatZapWrites logs the same lines through a plain zap
// core and through LazyFields: the output must be the same, fields in order,
// for loggers derived in a chain, with levels and V-levels respected.
func TestLazyFieldsWritesWhatZapWrites(t *testing.T) {
	type line struct {
		v   int // logr verbosity; -1: Error
		msg string
		kv  []any
	}
	tests := map[string]struct {
		with  [][]any // successive WithValues
		lines []line
	}{
		"no fields":         {lines: []line{{v: 0, msg: "hello"}}},
		"fields of a chain": {with: [][]any{{"controller", "pod"}, {"Pod", klog.KRef("ns", "p")}, {"reconcileID", "42"}}, lines: []line{{v: 0, msg: "bound", kv: []any{"node", "n1"}}}},
		"errors":            {with: [][]any{{"policy", "gpu"}}, lines: []line{{v: -1, msg: "bind failed", kv: []any{"pod", klog.KRef("ns", "p")}}}},
		"below the level":   {with: [][]any{{"policy", "gpu"}}, lines: []line{{v: 4, msg: "verbose"}, {v: 0, msg: "shown"}}},
		"empty WithValues":  {with: [][]any{{}, {"a", 1}, {}}, lines: []line{{v: 0, msg: "x"}}},
		"several lines":     {with: [][]any{{"a", 1}}, lines: []line{{v: 0, msg: "one"}, {v: 0, msg: "two", kv: []any{"b", 2}}, {v: -1, msg: "three"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			write := func(wrap bool) string {
				var buf bytes.Buffer
				enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg", LevelKey: "level", EncodeLevel: zapcore.LowercaseLevelEncoder})
				core := zapcore.NewCore(enc, zapcore.AddSync(&buf), zap.NewAtomicLevelAt(zapcore.InfoLevel))
				if wrap {
					core = LazyFields(core)
				}
				log := zapr.NewLogger(zap.New(core))
				for _, kv := range tc.with {
					log = log.WithValues(kv...)
				}
				for _, l := range tc.lines {
					if l.v < 0 {
						log.Error(nil, l.msg, l.kv...)
					} else {
						log.V(l.v).Info(l.msg, l.kv...)
					}
				}
				return buf.String()
			}
			want, got := write(false), write(true)
			if want == "" {
				t.Fatal("nothing was written: the test checks nothing")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("LazyFields output differs from zap's (-zap +lazy):\n%s", diff)
			}
		})
	}
}

// TestLazyFieldsDoesNotShareFields derives two loggers from one whose
// fields have room to grow: neither sees the other's fields.
func TestLazyFieldsDoesNotShareFields(t *testing.T) {
	var buf bytes.Buffer
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg"})
	core := &lazyCore{Core: zapcore.NewCore(enc, zapcore.AddSync(&buf), zapcore.InfoLevel), fields: make([]zapcore.Field, 0, 8)}
	base := zapr.NewLogger(zap.New(core)).WithValues("a", 1, "b", 2)
	x := base.WithValues("x", 1)
	y := base.WithValues("y", 2)
	x.Info("x")
	y.Info("y")
	want := `{"msg":"x","a":1,"b":2,"x":1}` + "\n" + `{"msg":"y","a":1,"b":2,"y":2}` + "\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestLazyFieldsWrite writes through the core directly, as a wrapping core
// may without Check: the fields are there too.
func TestLazyFieldsWrite(t *testing.T) {
	var buf bytes.Buffer
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg"})
	core := LazyFields(zapcore.NewCore(enc, zapcore.AddSync(&buf), zapcore.InfoLevel)).With([]zapcore.Field{zap.Int("a", 1)})
	if err := core.Write(zapcore.Entry{Message: "direct"}, []zapcore.Field{zap.Int("b", 2)}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"msg":"direct","a":1,"b":2}`+"\n", buf.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
