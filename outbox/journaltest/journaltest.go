// Package journaltest checks that a store keeps the contract of
// outbox.Journal: the same tests, run against every implementation. A
// store's test calls Run with a func that makes an empty store:
//
//	func TestMyJournal(t *testing.T) {
//		journaltest.Run(t, func(t *testing.T) journaltest.Open {
//			path := filepath.Join(t.TempDir(), "journal")
//			return func() (outbox.Journal, error) { return outbox.OpenFile(path) }
//		})
//	}
package journaltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
)

// Open opens a journal over one store. It may be called again once the
// Journal it returned is closed, and must then see what was written. For
// an outbox.SharedJournal it may also be called while another is open, as
// a second process would open the store.
type Open func() (outbox.Journal, error)

// Run runs the contract's tests as subtests of t. newStore is called once
// per subtest, to make an empty store; the journals it opens are closed by
// the tests. When the journal is an outbox.SharedJournal, the subtests of
// "Shared" check claims, leases and fencing too; otherwise "Shared" skips.
func Run(t *testing.T, newStore func(t *testing.T) Open) {
	tests := []struct {
		name string
		f    func(t *testing.T, open Open)
	}{
		{"AddLoad", testAddLoad},
		{"Reopen", testReopen},
		{"Duplicate", testDuplicate},
		{"UpdateUnknown", testUpdateUnknown},
		{"UpdateKeepsOp", testUpdateKeepsOp},
		{"Concurrent", testConcurrent},
		{"Closed", testClosed},
		{"Trace", testTrace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, newStore(t)) })
	}
	t.Run("Shared", func(t *testing.T) {
		open := newStore(t)
		j, err := open()
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		_, shared := j.(outbox.SharedJournal)
		j.Close()
		if !shared {
			t.Skip("not an outbox.SharedJournal")
		}
		runShared(t, newStore)
	})
}

// Entry returns a pending entry with every field set, n making it unique.
func Entry(key string, n int) outbox.Entry {
	at := time.Unix(1_700_000_000, 0).Add(time.Duration(n) * time.Millisecond)
	return outbox.Entry{
		Op: outbox.Op{
			Key: key, Kind: "send", Payload: []byte(fmt.Sprintf("payload %d", n)),
			NotAfter: at.Add(24 * time.Hour),
		},
		State: outbox.Pending, Next: at, Enqueued: at,
	}
}

// Equal reports how a and b differ, or "" if they do not. Times are
// compared with Equal, to the microsecond, as a database may keep them.
func Equal(a, b outbox.Entry) string {
	same := func(x, y time.Time) bool { return x.Truncate(time.Microsecond).Equal(y.Truncate(time.Microsecond)) }
	switch {
	case a.Op.Key != b.Op.Key:
		return fmt.Sprintf("Key %q, want %q", b.Op.Key, a.Op.Key)
	case a.Op.Kind != b.Op.Kind:
		return fmt.Sprintf("%s: Kind %q, want %q", a.Op.Key, b.Op.Kind, a.Op.Kind)
	case !bytes.Equal(a.Op.Payload, b.Op.Payload):
		return fmt.Sprintf("%s: Payload %q, want %q", a.Op.Key, b.Op.Payload, a.Op.Payload)
	case !same(a.Op.NotAfter, b.Op.NotAfter):
		return fmt.Sprintf("%s: NotAfter %v, want %v", a.Op.Key, b.Op.NotAfter, a.Op.NotAfter)
	case a.State != b.State:
		return fmt.Sprintf("%s: State %v, want %v", a.Op.Key, b.State, a.State)
	case a.Attempts != b.Attempts:
		return fmt.Sprintf("%s: Attempts %d, want %d", a.Op.Key, b.Attempts, a.Attempts)
	case !same(a.Next, b.Next):
		return fmt.Sprintf("%s: Next %v, want %v", a.Op.Key, b.Next, a.Next)
	case a.LastWait != b.LastWait:
		return fmt.Sprintf("%s: LastWait %v, want %v", a.Op.Key, b.LastWait, a.LastWait)
	case !same(a.Enqueued, b.Enqueued):
		return fmt.Sprintf("%s: Enqueued %v, want %v", a.Op.Key, b.Enqueued, a.Enqueued)
	case !same(a.Finished, b.Finished):
		return fmt.Sprintf("%s: Finished %v, want %v", a.Op.Key, b.Finished, a.Finished)
	case a.Reason != b.Reason || a.LastError != b.LastError:
		return fmt.Sprintf("%s: Reason, LastError %q, %q, want %q, %q", a.Op.Key, b.Reason, b.LastError, a.Reason, a.LastError)
	case a.Trace.Stop() != b.Trace.Stop() || a.Trace.Attempts() != b.Trace.Attempts():
		return fmt.Sprintf("%s: Trace %v, want %v", a.Op.Key, b.Trace, a.Trace)
	}
	ta, tb := slices.Collect(a.Trace.All()), slices.Collect(b.Trace.All())
	if len(ta) != len(tb) {
		return fmt.Sprintf("%s: Trace keeps %d attempts, want %d", a.Op.Key, len(tb), len(ta))
	}
	for i, x := range ta {
		y := tb[i]
		if x.Number != y.Number || x.Wait != y.Wait || !same(x.Start, y.Start) || x.Duration != y.Duration || x.Reason != y.Reason {
			return fmt.Sprintf("%s: Trace attempt %d is %+v, want %+v", a.Op.Key, x.Number, y, x)
		}
	}
	return ""
}

func mustOpen(t *testing.T, open Open) outbox.Journal {
	t.Helper()
	j, err := open()
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func expect(t *testing.T, j outbox.Journal, want ...outbox.Entry) {
	t.Helper()
	got, err := j.Load(context.Background())
	must(t, "Load", err)
	if len(got) != len(want) {
		t.Fatalf("Load returned %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if d := Equal(want[i], got[i]); d != "" {
			t.Errorf("Load()[%d]: %s", i, d)
		}
	}
}

func testAddLoad(t *testing.T, open Open) {
	ctx := context.Background()
	j := mustOpen(t, open)
	expect(t, j)
	es := []outbox.Entry{Entry("a", 1), Entry("b", 2), Entry("c", 3)}
	for _, e := range es {
		must(t, "Add", j.Add(ctx, e))
	}
	expect(t, j, es...) // in the order added
}

func testReopen(t *testing.T, open Open) {
	ctx := context.Background()
	j := mustOpen(t, open)
	a, b := Entry("a", 1), Entry("b", 2)
	must(t, "Add", j.Add(ctx, a))
	must(t, "Add", j.Add(ctx, b))
	a.Attempts, a.Next, a.LastWait, a.Reason, a.LastError = 2, a.Next.Add(time.Second), time.Second, "503", "boom"
	must(t, "Update", j.Update(ctx, a))
	b.State, b.Attempts, b.Finished, b.Next = outbox.Failed, 1, b.Enqueued.Add(time.Minute), time.Time{}
	b.Reason, b.LastError = "permanent", "declined"
	must(t, "Update", j.Update(ctx, b))
	must(t, "Close", j.Close())
	expect(t, mustOpen(t, open), a, b)
}

func testDuplicate(t *testing.T, open Open) {
	ctx := context.Background()
	j := mustOpen(t, open)
	a := Entry("a", 1)
	must(t, "Add", j.Add(ctx, a))
	if err := j.Add(ctx, Entry("a", 2)); !errors.Is(err, outbox.ErrDuplicate) {
		t.Errorf("Add of a held key = %v, want ErrDuplicate", err)
	}
	expect(t, j, a)
}

func testUpdateUnknown(t *testing.T, open Open) {
	j := mustOpen(t, open)
	if err := j.Update(context.Background(), Entry("nope", 1)); err == nil {
		t.Error("Update of an unknown key = nil, want an error")
	}
	expect(t, j)
}

func testUpdateKeepsOp(t *testing.T, open Open) {
	ctx := context.Background()
	j := mustOpen(t, open)
	a := Entry("a", 1)
	must(t, "Add", j.Add(ctx, a))
	changed := a
	changed.Op.Payload, changed.Op.Kind, changed.Attempts = []byte("other"), "other", 1
	must(t, "Update", j.Update(ctx, changed))
	a.Attempts = 1
	expect(t, j, a)
}

func testConcurrent(t *testing.T, open Open) {
	ctx := context.Background()
	j := mustOpen(t, open)
	const n = 32
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := Entry(fmt.Sprintf("k%02d", i), i)
			if err := j.Add(ctx, e); err != nil {
				errs <- err
				return
			}
			e.Attempts = 1
			if err := j.Update(ctx, e); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	must(t, "Close", j.Close())
	got, err := mustOpen(t, open).Load(ctx)
	must(t, "Load", err)
	if len(got) != n {
		t.Fatalf("Load returned %d entries, want %d", len(got), n)
	}
	for _, e := range got {
		if e.Attempts != 1 {
			t.Errorf("%s: Attempts %d, want 1", e.Op.Key, e.Attempts)
		}
	}
}

func testClosed(t *testing.T, open Open) {
	j := mustOpen(t, open)
	must(t, "Close", j.Close())
	if err := j.Add(context.Background(), Entry("a", 1)); err == nil {
		t.Error("Add after Close = nil, want an error")
	}
}

// testTrace: an entry's Trace is state like any other: every attempt it
// keeps (number, wait, start, duration, reason) and its stop reason come
// back from Load, after a reopen too, however long the op's history.
func testTrace(t *testing.T, open Open) {
	ctx := context.Background()
	j := mustOpen(t, open)
	a, b := Entry("a", 1), Entry("b", 2)
	must(t, "Add", j.Add(ctx, a))
	must(t, "Add", j.Add(ctx, b))
	at := a.Enqueued
	var as []retry.Attempt
	for n := 1; n <= 100; n++ { // more than a Trace keeps: the middle goes
		as = append(as, retry.Attempt{Number: n, Wait: time.Duration(n) * time.Millisecond, Start: at.Add(time.Duration(n) * time.Second), Duration: 3 * time.Millisecond, Reason: "503 Service Unavailable"})
	}
	a.Attempts, a.Trace = 100, retry.NewTrace(retry.StopNone, as)
	must(t, "Update", j.Update(ctx, a))
	b.State, b.Attempts, b.Finished, b.Reason, b.LastError = outbox.Failed, 1, at.Add(time.Minute), "permanent", "declined"
	b.Trace = retry.NewTrace(retry.StopNotRetryable, []retry.Attempt{{Number: 1, Start: at, Duration: time.Millisecond, Reason: "permanent"}})
	must(t, "Update", j.Update(ctx, b))
	expect(t, j, a, b)
	must(t, "Close", j.Close())
	expect(t, mustOpen(t, open), a, b)
}
