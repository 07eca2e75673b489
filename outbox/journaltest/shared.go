package journaltest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry/outbox"
)

// runShared checks the contract of outbox.SharedJournal: claims, leases,
// fencing.
func runShared(t *testing.T, newStore func(t *testing.T) Open) {
	tests := []struct {
		name string
		f    func(t *testing.T, open Open)
	}{
		{"ClaimDue", testClaimDue},
		{"ClaimOrderLimit", testClaimOrderLimit},
		{"ClaimHeld", testClaimHeld},
		{"ClaimCount", testClaimCount},
		{"Fencing", testFencing},
		{"Release", testRelease},
		{"UpdateRelease", testUpdateRelease},
		{"Renew", testRenew},
		{"FinishEndsLease", testFinishEndsLease},
		{"ConcurrentClaims", testConcurrentClaims},
		{"Get", testGet},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, newStore(t)) })
	}
}

// at is the tests' time origin: Entry(key, n) is due at at+n ms.
var at = time.Unix(1_700_000_000, 0)

func mustShared(t *testing.T, open Open) outbox.SharedJournal {
	t.Helper()
	return mustOpen(t, open).(outbox.SharedJournal)
}

func claim(t *testing.T, j outbox.SharedJournal, owner string, now time.Time, lease time.Duration, limit int, kinds ...string) []outbox.Entry {
	t.Helper()
	if kinds == nil {
		kinds = []string{"send"}
	}
	es, err := j.Claim(context.Background(), outbox.ClaimRequest{Owner: owner, Kinds: kinds, Now: now, Until: now.Add(lease), Limit: limit})
	must(t, "Claim", err)
	for _, e := range es {
		if e.Lease == "" {
			t.Errorf("Claim returned %s with an empty Lease", e.Op.Key)
		}
	}
	return es
}

func keys(es []outbox.Entry) []string {
	ks := make([]string, len(es))
	for i, e := range es {
		ks[i] = e.Op.Key
	}
	return ks
}

func wantKeys(t *testing.T, what string, es []outbox.Entry, want ...string) {
	t.Helper()
	if got := fmt.Sprint(keys(es)); got != fmt.Sprint(want) {
		t.Errorf("%s claimed %v, want %v", what, got, want)
	}
}

func testClaimDue(t *testing.T, open Open) {
	ctx := context.Background()
	j := mustShared(t, open)
	due, later, other := Entry("due", 1), Entry("later", 2), Entry("other", 3)
	later.Next = at.Add(time.Hour)
	other.Op.Kind = "mail"
	done := Entry("done", 4)
	for _, e := range []outbox.Entry{due, later, other, done} {
		must(t, "Add", j.Add(ctx, e))
	}
	done.State, done.Finished, done.Next = outbox.Succeeded, at, time.Time{}
	must(t, "Update", j.Update(ctx, done))
	now := at.Add(time.Minute)
	es := claim(t, j, "a", now, 3*time.Hour, 10)
	wantKeys(t, "Claim at +1m", es, "due")
	if len(es) == 1 {
		if d := Equal(due, es[0]); d != "" {
			t.Errorf("claimed entry: %s", d)
		}
	}
	wantKeys(t, "Claim of kind mail", claim(t, j, "a", now, time.Minute, 10, "mail"), "other")
	wantKeys(t, "Claim at +2h", claim(t, j, "a", at.Add(2*time.Hour), time.Minute, 10), "later")
}

func testClaimOrderLimit(t *testing.T, open Open) {
	ctx := context.Background()
	j := mustShared(t, open)
	for i, k := range []string{"c", "a", "b"} {
		e := Entry(k, 3-i) // c due last
		must(t, "Add", j.Add(ctx, e))
	}
	now := at.Add(time.Second)
	wantKeys(t, "Claim(limit 2)", claim(t, j, "a", now, time.Minute, 2), "b", "a")
	wantKeys(t, "second Claim", claim(t, j, "a", now, time.Minute, 2), "c")
}

func testClaimHeld(t *testing.T, open Open) {
	ctx := context.Background()
	a, b := mustShared(t, open), mustShared(t, open) // two processes
	must(t, "Add", a.Add(ctx, Entry("k", 1)))
	now := at.Add(time.Second)
	first := claim(t, a, "a", now, time.Minute, 1)
	wantKeys(t, "a's Claim", first, "k")
	wantKeys(t, "b's Claim while a's lease holds", claim(t, b, "b", now.Add(59*time.Second), time.Minute, 1))
	second := claim(t, b, "b", now.Add(time.Minute), time.Minute, 1)
	wantKeys(t, "b's Claim once a's lease ended", second, "k")
	if len(first) == 1 && len(second) == 1 && first[0].Lease == second[0].Lease {
		t.Errorf("two claims got the same lease token %q", first[0].Lease)
	}
}

// A Claim with Count counts the attempt it is for in its own write: the
// entry it returns, and the journal after it (a crash next), hold one
// more attempt; a Claim without Count leaves the count as it was.
func testClaimCount(t *testing.T, open Open) {
	ctx := context.Background()
	j := mustShared(t, open)
	e := Entry("k", 1)
	e.Attempts = 2
	must(t, "Add", j.Add(ctx, e))
	now := at.Add(time.Second)
	es, err := j.Claim(ctx, outbox.ClaimRequest{Owner: "a", Kinds: []string{"send"}, Now: now, Until: now.Add(time.Second), Limit: 1, Count: true})
	must(t, "Claim with Count", err)
	wantKeys(t, "Claim with Count", es, "k")
	if len(es) == 1 && es[0].Attempts != 3 {
		t.Errorf("Claim with Count returned Attempts %d, want 3", es[0].Attempts)
	}
	later := now.Add(2 * time.Second) // the lease lapsed, as after a crash
	got := claim(t, j, "b", later, time.Minute, 1)
	wantKeys(t, "Claim once the counted claim's lease lapsed", got, "k")
	if len(got) == 1 && got[0].Attempts != 3 {
		t.Errorf("after a counted claim and a crash, Attempts %d, want 3", got[0].Attempts)
	}
	if len(got) == 1 {
		must(t, "Release", j.Release(ctx, got[0]))
	}
	again := claim(t, j, "c", later, time.Minute, 1)
	if len(again) == 1 && again[0].Attempts != 3 {
		t.Errorf("after a Claim without Count, Attempts %d, want 3", again[0].Attempts)
	}
}

func testFencing(t *testing.T, open Open) {
	ctx := context.Background()
	a, b := mustShared(t, open), mustShared(t, open)
	e := Entry("k", 1)
	must(t, "Add", a.Add(ctx, e))
	now := at.Add(time.Second)
	stale := claim(t, a, "a", now, time.Second, 1)[0]
	owner := claim(t, b, "b", now.Add(2*time.Second), time.Minute, 1)[0]

	stale.Attempts, stale.State, stale.Finished = 1, outbox.Failed, now
	if err := a.Update(ctx, stale); !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("Update under a lease taken since = %v, want ErrLeaseLost", err)
	}
	unleased := e
	unleased.Attempts = 5
	if err := a.Update(ctx, unleased); !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("Update with no lease of a leased op = %v, want ErrLeaseLost", err)
	}
	lost, err := a.Renew(ctx, []outbox.Entry{stale}, now.Add(time.Hour))
	must(t, "Renew", err)
	if fmt.Sprint(lost) != "[k]" {
		t.Errorf("Renew of a taken lease lost %v, want [k]", lost)
	}
	must(t, "Release of a taken lease", a.Release(ctx, stale))
	wantKeys(t, "Claim after a stale Release", claim(t, a, "c", now.Add(3*time.Second), time.Minute, 1))

	owner.Attempts = 1
	must(t, "Update by the lease holder", b.Update(ctx, owner))
	want := e
	want.Attempts = 1
	expect(t, b, want)
}

func testRelease(t *testing.T, open Open) {
	ctx := context.Background()
	a, b := mustShared(t, open), mustShared(t, open)
	must(t, "Add", a.Add(ctx, Entry("k", 1)))
	now := at.Add(time.Second)
	e := claim(t, a, "a", now, time.Hour, 1)[0]
	e.Attempts = 1
	must(t, "Update", a.Update(ctx, e))
	must(t, "Release", a.Release(ctx, e))
	got := claim(t, b, "b", now, time.Hour, 1)
	wantKeys(t, "Claim at once after Release", got, "k")
	if len(got) == 1 && got[0].Attempts != 1 {
		t.Errorf("claimed Attempts %d, want 1 (written before the Release)", got[0].Attempts)
	}
}

// testUpdateRelease checks outbox.ReleasingJournal, for a journal that is
// one: the write is the Update's, the lease ends with it, and a lease
// taken since fences it off as it fences an Update.
func testUpdateRelease(t *testing.T, open Open) {
	ctx := context.Background()
	a, b := mustShared(t, open), mustShared(t, open)
	ra, ok := a.(outbox.ReleasingJournal)
	if !ok {
		t.Skip("not an outbox.ReleasingJournal")
	}
	must(t, "Add", a.Add(ctx, Entry("k", 1)))
	now := at.Add(time.Second)
	e := claim(t, a, "a", now, time.Hour, 1)[0]
	e.Attempts, e.Reason, e.LastError = 1, "error", "503"
	must(t, "UpdateRelease", ra.UpdateRelease(ctx, e))
	got := claim(t, b, "b", now, time.Hour, 1)
	wantKeys(t, "Claim at once after UpdateRelease", got, "k")
	if len(got) == 1 && (got[0].Attempts != 1 || got[0].LastError != "503") {
		t.Errorf("claimed Attempts %d, LastError %q; want 1, %q (written with the release)", got[0].Attempts, got[0].LastError, "503")
	}
	e.Attempts = 2
	if err := ra.UpdateRelease(ctx, e); !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("UpdateRelease under a lease taken since = %v, want ErrLeaseLost", err)
	}
	lost, err := b.Renew(ctx, got, now.Add(time.Hour))
	must(t, "Renew", err)
	if len(lost) != 0 {
		t.Errorf("the stale UpdateRelease ended the new holder's lease: Renew lost %v", lost)
	}
}

func testRenew(t *testing.T, open Open) {
	ctx := context.Background()
	a, b := mustShared(t, open), mustShared(t, open)
	must(t, "Add", a.Add(ctx, Entry("k", 1)))
	now := at.Add(time.Second)
	e := claim(t, a, "a", now, 10*time.Second, 1)[0]
	lost, err := a.Renew(ctx, []outbox.Entry{e}, now.Add(time.Minute))
	must(t, "Renew", err)
	if len(lost) != 0 {
		t.Errorf("Renew of a held lease lost %v", lost)
	}
	wantKeys(t, "Claim within the renewed lease", claim(t, b, "b", now.Add(30*time.Second), time.Minute, 1))
	wantKeys(t, "Claim after the renewed lease", claim(t, b, "b", now.Add(time.Minute), time.Minute, 1), "k")
}

func testFinishEndsLease(t *testing.T, open Open) {
	ctx := context.Background()
	j := mustShared(t, open)
	must(t, "Add", j.Add(ctx, Entry("k", 1)))
	now := at.Add(time.Second)
	e := claim(t, j, "a", now, time.Hour, 1)[0]
	e.State, e.Attempts, e.Finished, e.Next, e.Reason = outbox.Failed, 1, now, time.Time{}, "permanent"
	must(t, "Update to Failed", j.Update(ctx, e))
	wantKeys(t, "Claim of a failed op", claim(t, j, "a", now.Add(2*time.Hour), time.Hour, 1))
	// A redrive writes with no lease: the finished op holds none.
	e.Lease, e.State, e.Attempts, e.Next, e.Finished = "", outbox.Pending, 0, now, time.Time{}
	must(t, "Update of a finished op with no lease", j.Update(ctx, e))
	wantKeys(t, "Claim after the redrive", claim(t, j, "a", now, time.Hour, 1), "k")
}

func testConcurrentClaims(t *testing.T, open Open) {
	ctx := context.Background()
	const n, workers = 60, 4
	js := make([]outbox.SharedJournal, workers)
	for i := range js {
		js[i] = mustShared(t, open)
	}
	for i := range n {
		must(t, "Add", js[0].Add(ctx, Entry(fmt.Sprintf("k%02d", i), i)))
	}
	now := at.Add(time.Minute)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w, j := range js {
		wg.Go(func() {
			for {
				es, err := j.Claim(ctx, outbox.ClaimRequest{Owner: fmt.Sprint(w), Kinds: []string{"send"}, Now: now, Until: now.Add(time.Hour), Limit: 7})
				if err != nil {
					errs <- err
					return
				}
				if len(es) == 0 {
					return
				}
				mu.Lock()
				for _, e := range es {
					seen[e.Op.Key]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(seen) != n {
		t.Errorf("%d ops claimed, want %d", len(seen), n)
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("%s claimed %d times, want once", k, c)
		}
	}
}

func testGet(t *testing.T, open Open) {
	ctx := context.Background()
	j := mustShared(t, open)
	a, b := Entry("a", 1), Entry("b", 2)
	must(t, "Add", j.Add(ctx, a))
	must(t, "Add", j.Add(ctx, b))
	b.State, b.Attempts, b.Finished, b.Next = outbox.Succeeded, 1, b.Enqueued, time.Time{}
	must(t, "Update", j.Update(ctx, b))
	es, err := j.Get(ctx, []string{"b", "nope", "a"})
	must(t, "Get", err)
	if len(es) != 2 {
		t.Fatalf("Get returned %d entries, want 2", len(es))
	}
	if es[0].Op.Key != "a" {
		es[0], es[1] = es[1], es[0]
	}
	for i, want := range []outbox.Entry{a, b} {
		if d := Equal(want, es[i]); d != "" {
			t.Errorf("Get: %s", d)
		}
	}
}
