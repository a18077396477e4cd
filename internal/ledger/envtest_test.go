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

package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/metrics"
	"github.com/bindgate/bindgate/internal/testenv"
	"github.com/bindgate/bindgate/internal/testenv/faults"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// uniq names an object apart from every other of the test process.
var uniq = testenv.Uniq

// TestGroupCommit records 200 reservations from 200 goroutines against the
// real API server: all are durable when Record returns, in far fewer status
// writes than reservations, and releases empty the status again.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	p := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: uniq("group-commit")}}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	l := New(env.Client, env.Client, nil)
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- l.Record(ctx, p.Name, res(fmt.Sprintf("p%03d", i), "n1", "100m", i%2 == 0))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := &bindgatev1alpha1.BindingPolicy{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Reservations) != n || got.Status.ReservedPods != n || got.Status.WaitingPods != n/2 {
		t.Fatalf("status holds %d reservations (reservedPods %d, waitingPods %d), want %d (%d waiting)",
			len(got.Status.Reservations), got.Status.ReservedPods, got.Status.WaitingPods, n, n/2)
	}
	if cpu := got.Status.Reserved.Cpu().String(); cpu != "20" {
		t.Errorf("reserved cpu = %s, want 20", cpu)
	}
	writes := l.Writes()
	if got := testutil.ToFloat64(metrics.LedgerWrites); got < float64(writes) {
		t.Errorf("bindgate_ledger_writes_total = %v, want at least %d", got, writes)
	}
	t.Logf("%d reservations in %d status writes", n, writes)
	if writes >= n/2 {
		t.Errorf("%d status writes for %d reservations: changes were not group-committed", writes, n)
	}

	for i := range n {
		l.Release(p.Name, types.UID(fmt.Sprintf("uid-p%03d", i)))
	}
	if err := l.ReleaseAndWait(ctx, p.Name, "uid-none"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Reservations) != 0 || got.Status.ReservedPods != 0 || got.Status.Reserved != nil {
		t.Fatalf("after release: %d reservations, reservedPods %d, reserved %v", len(got.Status.Reservations), got.Status.ReservedPods, got.Status.Reserved)
	}
}

func TestRecordOnMissingPolicy(t *testing.T) {
	l := New(env.Client, env.Client, nil)
	err := l.Record(context.Background(), "does-not-exist", res("x", "n1", "1", false))
	if err == nil || !errorsIs(err, ErrPolicyGone) {
		t.Fatalf("err = %v, want ErrPolicyGone", err)
	}
}

// newPolicy creates a BindingPolicy named after prefix.
func newPolicy(t *testing.T, prefix string) *bindgatev1alpha1.BindingPolicy {
	t.Helper()
	p := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: uniq(prefix)}}
	if err := env.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// recordedPods names the pods the policy's status records, as the API
// server has it.
func recordedPods(t *testing.T, p *bindgatev1alpha1.BindingPolicy) []string {
	t.Helper()
	got := &bindgatev1alpha1.BindingPolicy{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got.Status.Reservations {
		names = append(names, r.PodName)
	}
	return names
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// limitedLedger creates a policy named after prefix and a ledger that
// records at most max reservations in its status.
func limitedLedger(t *testing.T, prefix string, max int) (*bindgatev1alpha1.BindingPolicy, *Ledger) {
	t.Helper()
	p := newPolicy(t, prefix)
	l := New(env.Client, env.Client, nil)
	l.MaxReservations = max
	return p, l
}

// TestStatusFull: at the bound, Record refuses further reservations with
// ErrStatusFull at once (no status write the API server would refuse, no
// retry), the policy's ReservationsFull condition says so, and a release
// makes room again.
func TestStatusFull(t *testing.T) {
	ctx := context.Background()
	p, l := limitedLedger(t, "status-full", 3)
	for i := range 3 {
		if err := l.Record(ctx, p.Name, res(fmt.Sprintf("p%d", i), "n1", "100m", false)); err != nil {
			t.Fatal(err)
		}
	}
	writes := l.Writes()
	err := l.Record(ctx, p.Name, res("p3", "n1", "100m", false))
	if !errors.Is(err, ErrStatusFull) {
		t.Fatalf("4th reservation: %v, want ErrStatusFull", err)
	}
	condition := func() string {
		got := &bindgatev1alpha1.BindingPolicy{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == bindgatev1alpha1.ConditionReservationsFull {
				return string(c.Status) + "/" + c.Reason + ": " + c.Message
			}
		}
		return ""
	}
	if c := condition(); c != "True/MaxReservations: status.reservations holds 3 reservations, the most a policy's status may record (etcd's object size limit); further pods of this policy wait (refused 1) until some bind or are released" {
		t.Errorf("condition %q", c)
	}
	if got := l.Writes() - writes; got != 1 {
		t.Errorf("%d status writes for the refused reservation, want 1 (the condition)", got)
	}
	if err := l.ReleaseAndWait(ctx, p.Name, "uid-p0"); err != nil {
		t.Fatal(err)
	}
	if c := condition(); c != "False/HasRoom: status.reservations holds 2 of at most 3 reservations" {
		t.Errorf("after a release: condition %q", c)
	}
	if err := l.Record(ctx, p.Name, res("p3", "n1", "100m", false)); err != nil {
		t.Errorf("after a release: %v", err)
	}
}

// TestRecordAll: reservations recorded together land in one status write,
// and none of them when the status has no room for all.
func TestRecordAll(t *testing.T) {
	ctx := context.Background()
	p, l := limitedLedger(t, "record-all", 4)
	group := func(names ...string) []*bindgatev1alpha1.Reservation {
		var rs []*bindgatev1alpha1.Reservation
		for _, n := range names {
			rs = append(rs, res(n, "n1", "100m", false))
		}
		return rs
	}
	held := func() []string { return recordedPods(t, p) }
	writes := l.Writes()
	for i, err := range l.RecordAll(ctx, p.Name, group("a", "b", "c")) {
		if err != nil {
			t.Fatalf("reservation %d of the first group: %v", i, err)
		}
	}
	if got := l.Writes() - writes; got != 1 {
		t.Errorf("%d status writes for a group of 3, want 1", got)
	}
	for i, err := range l.RecordAll(ctx, p.Name, group("d", "e")) {
		if !errors.Is(err, ErrStatusFull) {
			t.Errorf("reservation %d of a group of 2 with room for 1: %v, want ErrStatusFull", i, err)
		}
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, held()); diff != "" {
		t.Errorf("held (-want +got):\n%s", diff)
	}
	for i, err := range l.RecordAll(ctx, p.Name, group("d")) {
		if err != nil {
			t.Errorf("reservation %d of a group of 1 with room for 1: %v", i, err)
		}
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d"}, held()); diff != "" {
		t.Errorf("held (-want +got):\n%s", diff)
	}
}

// TestReleaseSurvivesFailedWrites: a release whose status write fails (a
// 503 from the API server) is written again until it lands; it used to be
// dropped, leaving the reservation in the status for good (the fault
// suite's TestWriteErrors found it).
func TestReleaseSurvivesFailedWrites(t *testing.T) {
	ctx := context.Background()
	p := &bindgatev1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: uniq("release-retried")}}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	px, err := faults.Start(env.Config, faults.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = px.Close() }()
	c, err := client.New(px.Config(), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	l := New(c, c, nil)
	if err := l.Record(ctx, p.Name, res("held", "n1", "1", false)); err != nil {
		t.Fatal(err)
	}
	statusWrites := func(r faults.Request) bool { return r.Resource == "bindingpolicies" && r.Subresource == "status" }
	if err := px.SetRules([]faults.Rule{{Kind: faults.ServerError, Rate: 1, Match: statusWrites}}); err != nil {
		t.Fatal(err)
	}
	l.Release(p.Name, "uid-held")
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return px.Counts()[faults.ServerError] >= 2, nil
	}); err != nil {
		t.Fatalf("the release was not written again after a failed write (%d failed writes)", px.Counts()[faults.ServerError])
	}
	if err := px.SetRules(nil); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got := &bindgatev1alpha1.BindingPolicy{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return false, err
		}
		return len(got.Status.Reservations) == 0, nil
	}); err != nil {
		t.Fatalf("the reservation is still in the status after %d failed writes: %v", px.Counts()[faults.ServerError], err)
	}
}

// TestReleaseSeen: a record another writer added after the ledger's last
// write (another replica's) is taken out by ReleaseSeen, though the status
// the ledger last wrote does not hold it; the ledger's own record stays.
func TestReleaseSeen(t *testing.T) {
	ctx := context.Background()
	p := newPolicy(t, "release-seen")
	l := New(env.Client, env.Client, nil)
	mine, theirs := res(uniq("mine"), "n1", "1", false), res(uniq("theirs"), "n2", "1", false)
	if err := l.Record(ctx, p.Name, mine); err != nil {
		t.Fatal(err)
	}
	// The other replica records its own.
	other := New(env.Client, env.Client, nil)
	if err := other.Record(ctx, p.Name, theirs); err != nil {
		t.Fatal(err)
	}
	l.ReleaseSeen(p.Name, theirs.PodUID)
	// Queued after ReleaseSeen: it returns once that is committed too.
	if err := l.ReleaseAndWait(ctx, p.Name, "uid-none"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{mine.PodName}, recordedPods(t, p)); diff != "" {
		t.Errorf("status.reservations (-want +got):\n%s", diff)
	}
}

// TestRefusedBeforeTheWrite: a reservation the validator refuses fails with
// ErrLostRace and ErrNotWritten (the caller has no record to take back), and
// is not in the status; the others of the batch are.
func TestRefusedBeforeTheWrite(t *testing.T) {
	ctx := context.Background()
	p := newPolicy(t, "refused")
	refused, kept := res(uniq("refused"), "n1", "1", false), res(uniq("kept"), "n1", "1", false)
	l := New(env.Client, env.Client, func(_ context.Context, _ *bindgatev1alpha1.BindingPolicy, adds []*bindgatev1alpha1.Reservation) map[types.UID]error {
		return map[types.UID]error{refused.PodUID: fmt.Errorf("%w on node n1", ErrLostRace)}
	})
	l.ValidateEveryWrite = true
	errs := l.RecordAll(ctx, p.Name, []*bindgatev1alpha1.Reservation{refused, kept})
	if !errors.Is(errs[0], ErrLostRace) || !errors.Is(errs[0], ErrNotWritten) {
		t.Errorf("refused: %v, want ErrLostRace and ErrNotWritten", errs[0])
	}
	if errs[1] != nil {
		t.Errorf("kept: %v", errs[1])
	}
	if diff := cmp.Diff([]string{kept.PodName}, recordedPods(t, p)); diff != "" {
		t.Errorf("status.reservations (-want +got):\n%s", diff)
	}
}
