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

// Package ledger records reservations durably in each BindingPolicy's
// status.reservations. Changes from many workers are group-committed: one
// status write per policy carries every change queued while the previous
// write was in flight, guarded by the object's resourceVersion (optimistic
// concurrency). Record returns once its reservation is durable; Release is
// asynchronous, and written again after a failed write until it lands.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
	"github.com/bindgate/bindgate/internal/framework"
	"github.com/bindgate/bindgate/internal/metrics"
)

// ErrPolicyGone means the policy was deleted: its reservations are void.
var ErrPolicyGone = errors.New("the BindingPolicy no longer exists")

// ErrLostRace means a reservation recorded by someone else meanwhile (another
// replica) leaves no room for this one.
var ErrLostRace = errors.New("another reservation took the capacity first")

// ErrNotWritten marks a reservation the validator refused before the write
// (with ErrLostRace): the API server never saw it, so there is no record of
// it to take back.
var ErrNotWritten = errors.New("not written")

// ErrStatusFull means the policy's status already records the most
// reservations it may hold (bindgatev1alpha1.MaxReservations): one more
// could push the object past etcd's size limit.
var ErrStatusFull = errors.New("the BindingPolicy's status records the most reservations it may hold")

// Validator re-checks pending additions after the ledger saw a newer status
// (written by another replica). It returns the UIDs that no longer fit.
type Validator func(ctx context.Context, policy *bindgatev1alpha1.BindingPolicy, adds []*bindgatev1alpha1.Reservation) map[types.UID]error

type op struct {
	add    *bindgatev1alpha1.Reservation
	remove types.UID
	// only, on a removal, limits it to this very record (see ReleaseRecord).
	only *bindgatev1alpha1.Reservation
	// seen, on a removal, says the caller saw the record in a status the
	// ledger may not have read yet (see ReleaseSeen).
	seen bool
	// group, when not zero, ties additions recorded together (RecordAll):
	// when the status has no room for all of them, none is recorded.
	group uint64
	done  chan error // nil for fire-and-forget
}

// removes says whether o, a removal, takes out the entry r.
func (o op) removes(r bindgatev1alpha1.Reservation) bool {
	return o.add == nil && o.remove == r.PodUID && (o.only == nil || sameRecord(r, *o.only))
}

// sameRecord says whether a and b are the same record of a pod: on the same
// node, taken at the same time (to the second the status keeps).
func sameRecord(a, b bindgatev1alpha1.Reservation) bool {
	return a.PodUID == b.PodUID && a.Node == b.Node &&
		a.ReservedAt.Truncate(time.Second).Equal(b.ReservedAt.Truncate(time.Second))
}

type policyQueue struct {
	ops      []op
	flushing bool
	last     *bindgatev1alpha1.BindingPolicy // last status written or read
}

// Ledger is safe for concurrent use.
type Ledger struct {
	client   client.Client
	reader   client.Reader // uncached reads after a conflict
	validate Validator
	// ValidateEveryWrite runs the validator before every write, not only
	// after reading the status afresh. Set it when several replicas may be
	// active at once (leader election off).
	ValidateEveryWrite bool
	// MaxReservations is the most reservations a policy's status records
	// (past it, ErrStatusFull). Zero, or more than
	// bindgatev1alpha1.MaxReservations (status.reservations maxItems),
	// means bindgatev1alpha1.MaxReservations; tests lower it.
	MaxReservations int

	mu     sync.Mutex
	queues map[string]*policyQueue
	// groups numbers RecordAll's groups.
	groups uint64
	// writes counts status writes, for tests and metrics.
	writes int64
	ctx    context.Context
}

// New makes a ledger that writes with c and re-reads with reader (an
// uncached reader such as mgr.GetAPIReader()).
func New(c client.Client, reader client.Reader, validate Validator) *Ledger {
	return &Ledger{client: c, reader: reader, validate: validate, queues: map[string]*policyQueue{}, ctx: context.Background()}
}

// Start implements manager.Runnable: it sets the context flushes run under.
func (l *Ledger) Start(ctx context.Context) error {
	l.mu.Lock()
	l.ctx = ctx
	l.mu.Unlock()
	<-ctx.Done()
	return nil
}

// Writes returns how many status writes the ledger made.
func (l *Ledger) Writes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes
}

// Record makes r durable in the policy's status and returns once it is (or
// with the reason it cannot be).
func (l *Ledger) Record(ctx context.Context, policy string, r *bindgatev1alpha1.Reservation) error {
	done := make(chan error, 1)
	l.enqueue(policy, op{add: r, done: done})
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RecordAll makes rs durable in the policy's status together: in one status
// write, and none of them when the status has no room for all (each then
// fails with ErrStatusFull). It returns one result per reservation, once
// all are known; a failure other than ErrStatusFull (another replica's
// record took the capacity, a write failed) is reported for the
// reservations it concerns, and the others may have been recorded.
func (l *Ledger) RecordAll(ctx context.Context, policy string, rs []*bindgatev1alpha1.Reservation) []error {
	results := make([]error, len(rs))
	if len(rs) == 0 {
		return results
	}
	dones := make([]chan error, len(rs))
	l.mu.Lock()
	l.groups++
	group := l.groups
	ops := make([]op, len(rs))
	for i, r := range rs {
		dones[i] = make(chan error, 1)
		ops[i] = op{add: r, group: group, done: dones[i]}
	}
	l.enqueueLocked(policy, ops...)
	l.mu.Unlock()
	for i, done := range dones {
		select {
		case results[i] = <-done:
		case <-ctx.Done():
			results[i] = ctx.Err()
		}
	}
	return results
}

// Release removes a pod's reservation from the policy's status in a later
// group commit. It is idempotent.
func (l *Ledger) Release(policy string, uid types.UID) {
	l.enqueue(policy, op{remove: uid})
}

// ReleaseRecord removes r from the policy's status in a later group commit,
// if the status holds that very record (not a later one of the same pod, nor
// another replica's): it undoes a Record that failed, which the API server
// may still have applied (a write answered 504 or cut off after it reached
// the server). Like Release, it is written again until it lands.
func (l *Ledger) ReleaseRecord(policy string, r *bindgatev1alpha1.Reservation) {
	l.enqueue(policy, op{remove: r.PodUID, only: r})
}

// ReleaseSeen is Release for a pod whose record the caller may have seen in
// a newer status than the ledger wrote or read last (another replica's
// record, or this process's before a restart, counted from a policy
// event): when the ledger's last status holds no record of the pod, the
// status is read afresh before the ledger concludes that there is none.
func (l *Ledger) ReleaseSeen(policy string, uid types.UID) {
	l.enqueue(policy, op{remove: uid, seen: true})
}

// ReleaseAndWait removes a reservation and waits until the removal is durable.
func (l *Ledger) ReleaseAndWait(ctx context.Context, policy string, uid types.UID) error {
	done := make(chan error, 1)
	l.enqueue(policy, op{remove: uid, done: done})
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Ledger) enqueue(policy string, o op) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.enqueueLocked(policy, o)
}

// enqueueLocked queues ops for the policy's next group commit, all in the
// same one (a flush takes every op queued). The caller holds l.mu.
func (l *Ledger) enqueueLocked(policy string, ops ...op) {
	q := l.queues[policy]
	if q == nil {
		q = &policyQueue{}
		l.queues[policy] = q
	}
	q.ops = append(q.ops, ops...)
	if !q.flushing {
		q.flushing = true
		go l.flushLoop(policy, q)
	}
}

// flushLoop writes batches for one policy until its queue is empty.
func (l *Ledger) flushLoop(policy string, q *policyQueue) {
	for {
		l.mu.Lock()
		ops := q.ops
		q.ops = nil
		if len(ops) == 0 {
			q.flushing = false
			l.mu.Unlock()
			return
		}
		ctx := l.ctx
		last := q.last
		l.mu.Unlock()

		written, results := l.commit(ctx, policy, last, ops)

		var (
			again   []op
			lastErr error
		)
		for i, o := range ops {
			switch {
			case o.done != nil:
				o.done <- results[i]
			case results[i] != nil && !errors.Is(results[i], ErrPolicyGone) && ctx.Err() == nil:
				// A release nobody waits for must outlive a failed write
				// (a 5xx, a timeout): lost, it would hold its capacity in
				// the status for good.
				again = append(again, o)
				lastErr = results[i]
			}
		}
		if len(again) > 0 {
			ctrl.LoggerFrom(ctx).V(2).Info("Writing releases again after a failed status write", "policy", policy, "releases", len(again), "error", lastErr.Error())
			select {
			case <-time.After(releaseRetryDelay):
			case <-ctx.Done():
			}
		}
		l.mu.Lock()
		q.last = written
		// Before what was queued meanwhile: a later record of the same pod
		// must still win.
		q.ops = append(again, q.ops...)
		l.mu.Unlock()
	}
}

// releaseRetryDelay is the pause before releases are written again after a
// failed status write.
const releaseRetryDelay = 200 * time.Millisecond

// commit applies ops to the policy's status and writes it, re-reading and
// re-applying on conflict. It returns the object written and one result per op.
func (l *Ledger) commit(ctx context.Context, policy string, last *bindgatev1alpha1.BindingPolicy, ops []op) (*bindgatev1alpha1.BindingPolicy, []error) {
	log := ctrl.LoggerFrom(ctx).WithValues("policy", policy)
	results := make([]error, len(ops))
	cur := last
	for {
		fresh := false
		if cur == nil {
			cur = &bindgatev1alpha1.BindingPolicy{}
			if err := l.reader.Get(ctx, types.NamespacedName{Name: policy}, cur); err != nil {
				if apierrors.IsNotFound(err) {
					err = ErrPolicyGone
				}
				for i := range results {
					if results[i] == nil {
						results[i] = fmt.Errorf("reading BindingPolicy %s: %w", policy, err)
					}
				}
				return nil, results
			}
			fresh = true
		}
		// Validate whenever the status was read afresh (after a conflict,
		// or on the first write for a policy, when this process has not
		// written the status it extends), and on every write when
		// ValidateEveryWrite is set: with several active replicas, a write
		// that does not conflict only proves that nobody wrote the status
		// since, not that this process's informers have seen the pods
		// another replica bound (and already released) on the nodes it now
		// reserves on.
		if l.validate != nil && (fresh || l.ValidateEveryWrite) {
			var adds []*bindgatev1alpha1.Reservation
			for i, o := range ops {
				if o.add != nil && results[i] == nil {
					adds = append(adds, o.add)
				}
			}
			if len(adds) > 0 {
				lost := l.validate(ctx, cur, adds)
				for i, o := range ops {
					if o.add != nil && results[i] == nil {
						if err, bad := lost[o.add.PodUID]; bad {
							results[i] = fmt.Errorf("%w (%w)", err, ErrNotWritten)
						}
					}
				}
			}
		}
		next := cur.DeepCopy()
		if !apply(&next.Status, ops, results, l.max()) {
			if !fresh && missesSeen(cur, ops, results) {
				// A record seen in a newer status than the one last
				// written or read: read it.
				cur = nil
				continue
			}
			// Nothing to write: e.g. the release of a reservation that was
			// never recorded (held in memory only) or already gone.
			return cur, results
		}
		err := l.client.Status().Update(ctx, next)
		if err == nil {
			l.mu.Lock()
			l.writes++
			l.mu.Unlock()
			metrics.LedgerWrites.Inc()
			log.V(5).Info("Committed reservations", "changes", len(ops), "reserved", next.Status.ReservedPods)
			return next, results
		}
		if apierrors.IsConflict(err) && ctx.Err() == nil {
			cur = nil
			continue
		}
		if apierrors.IsNotFound(err) {
			err = ErrPolicyGone
		}
		for i := range results {
			if results[i] == nil {
				results[i] = fmt.Errorf("writing the status of BindingPolicy %s: %w", policy, err)
			}
		}
		return nil, results
	}
}

// missesSeen says whether a removal of a record seen elsewhere (ReleaseSeen)
// finds no record in cur to take out. A write that does not conflict proves
// the status unchanged since cur, so only a batch with nothing to write
// needs to look again.
func missesSeen(cur *bindgatev1alpha1.BindingPolicy, ops []op, results []error) bool {
	for i, o := range ops {
		if !o.seen || results[i] != nil {
			continue
		}
		if !slices.ContainsFunc(cur.Status.Reservations, o.removes) {
			return true
		}
	}
	return false
}

// groupAdds counts the additions of ops[from]'s group, from there on, that
// would add a record: not failed already, not undone by a later removal,
// for a pod the status does not hold.
func groupAdds(ops []op, from int, byUID map[types.UID]bindgatev1alpha1.Reservation, results []error, undone func(int, *bindgatev1alpha1.Reservation) bool) int {
	n := 0
	for j := from; j < len(ops); j++ {
		o := ops[j]
		if o.group != ops[from].group || o.add == nil || (results != nil && results[j] != nil) || undone(j, o.add) {
			continue
		}
		if _, ok := byUID[o.add.PodUID]; !ok {
			n++
		}
	}
	return n
}

// max is the most reservations a policy's status records.
func (l *Ledger) max() int {
	if l.MaxReservations <= 0 || l.MaxReservations > bindgatev1alpha1.MaxReservations {
		return bindgatev1alpha1.MaxReservations
	}
	return l.MaxReservations
}

// apply applies ops whose result is still nil to status, recording at most
// max reservations, and recomputes the status totals. It reports whether
// the reservations changed.
func apply(status *bindgatev1alpha1.BindingPolicyStatus, ops []op, results []error, max int) bool {
	byUID := make(map[types.UID]bindgatev1alpha1.Reservation, len(status.Reservations)+len(ops))
	for _, r := range status.Reservations {
		byUID[r.PodUID] = r
	}
	changed, removed := false, false
	// Removals first, so that a batch that frees entries makes room for
	// its own additions.
	for i, o := range ops {
		if o.add != nil || (results != nil && results[i] != nil) {
			continue
		}
		if cur, ok := byUID[o.remove]; ok && o.removes(cur) {
			changed, removed = true, true
			delete(byUID, o.remove)
		}
	}
	// An addition that a later removal of the same pod in this batch
	// undoes is not applied: the pod was released (deleted, bound) after
	// it was recorded, and removals going first must not resurrect it.
	removals := map[types.UID][]int{}
	for i, o := range ops {
		if o.add == nil && (results == nil || results[i] == nil) {
			removals[o.remove] = append(removals[o.remove], i)
		}
	}
	undone := func(i int, add *bindgatev1alpha1.Reservation) bool {
		for _, j := range removals[add.PodUID] {
			if j > i && ops[j].removes(*add) {
				return true
			}
		}
		return false
	}
	full, need := 0, 0 // need: the largest group refused
	refuse := func(i int) {
		full++
		if results != nil {
			results[i] = fmt.Errorf("%w (%d, status.reservations maxItems)", ErrStatusFull, max)
		}
	}
	// refused holds the groups (RecordAll) decided in this batch: true
	// when the status has no room for all of the group.
	var refused map[uint64]bool
	for i, o := range ops {
		if o.add == nil || (results != nil && results[i] != nil) {
			continue
		}
		if undone(i, o.add) {
			continue
		}
		old, ok := byUID[o.add.PodUID]
		if o.group != 0 && !ok {
			if _, decided := refused[o.group]; !decided {
				if refused == nil {
					refused = map[uint64]bool{}
				}
				n := groupAdds(ops, i, byUID, results, undone)
				refused[o.group] = len(byUID)+n > max
				if refused[o.group] && n > need {
					need = n
				}
			}
			if refused[o.group] {
				refuse(i)
				continue
			}
		}
		if !ok && len(byUID) >= max {
			refuse(i)
			continue
		}
		if !ok || !apiequality.Semantic.DeepEqual(old, *o.add) {
			changed = true
		}
		byUID[o.add.PodUID] = *o.add
	}
	if setFull(status, full, need, len(byUID), max, removed) {
		changed = true
	}
	if !changed {
		return false
	}
	status.Reservations = status.Reservations[:0]
	for _, r := range byUID {
		status.Reservations = append(status.Reservations, r)
	}
	if len(status.Reservations) == 0 {
		status.Reservations = nil
	}
	sort.Slice(status.Reservations, func(i, j int) bool {
		a, b := status.Reservations[i], status.Reservations[j]
		if a.PodNamespace != b.PodNamespace {
			return a.PodNamespace < b.PodNamespace
		}
		return a.PodName < b.PodName
	})
	Totals(status)
	return true
}

// setFull keeps the policy's ReservationsFull condition: True, naming how
// many reservations were refused, while additions are refused for want of
// room (need, when not zero, is the largest group refused: the status may
// still have room for fewer); False once a removal made room again. Updates
// of records the status holds, and additions it had room for, leave it as
// it is. It reports a change.
func setFull(status *bindgatev1alpha1.BindingPolicyStatus, refused, need, held, max int, removed bool) bool {
	cur := meta.FindStatusCondition(status.Conditions, bindgatev1alpha1.ConditionReservationsFull)
	var want metav1.Condition
	switch {
	case refused > 0 && held < max:
		want = metav1.Condition{
			Type: bindgatev1alpha1.ConditionReservationsFull, Status: metav1.ConditionTrue, Reason: bindgatev1alpha1.ReasonMaxReservations,
			Message: fmt.Sprintf("status.reservations holds %d of at most %d reservations (etcd's object size limit), too few left for a gang of %d "+
				"recorded together; further pods of this policy wait (refused %d) until some bind or are released", held, max, need, refused),
		}
	case refused > 0:
		want = metav1.Condition{
			Type: bindgatev1alpha1.ConditionReservationsFull, Status: metav1.ConditionTrue, Reason: bindgatev1alpha1.ReasonMaxReservations,
			Message: fmt.Sprintf("status.reservations holds %d reservations, the most a policy's status may record (etcd's object size limit); "+
				"further pods of this policy wait (refused %d) until some bind or are released", held, refused),
		}
	case cur != nil && cur.Status == metav1.ConditionTrue && removed && held < max:
		want = metav1.Condition{
			Type: bindgatev1alpha1.ConditionReservationsFull, Status: metav1.ConditionFalse, Reason: bindgatev1alpha1.ReasonHasRoom,
			Message: fmt.Sprintf("status.reservations holds %d of at most %d reservations", held, max),
		}
	default:
		return false
	}
	if cur != nil && cur.Status == want.Status && cur.Reason == want.Reason && cur.Message == want.Message {
		return false
	}
	return meta.SetStatusCondition(&status.Conditions, want)
}

// Totals recomputes reservedPods, reserved and waitingPods from reservations.
func Totals(status *bindgatev1alpha1.BindingPolicyStatus) {
	sum := &framework.Resource{}
	var waiting int32
	for i := range status.Reservations {
		sum.Add(status.Reservations[i].Resources)
		if status.Reservations[i].PermitDeadline != nil {
			waiting++
		}
	}
	status.ReservedPods = int32(len(status.Reservations))
	status.WaitingPods = waiting
	status.Reserved = nil
	if len(status.Reservations) > 0 {
		status.Reserved = sum.ResourceList()
		if len(status.Reserved) == 0 {
			status.Reserved = nil
		}
	}
}
