package pgjournal_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox"
)

// Updates and Releases made together share statements (batch.go), and each
// still gets its own answer: the ones whose lease holds are written and
// return nil, a stale lease gets ErrLeaseLost, an unknown key an error,
// and a Release ends its lease; all of it is durable when each returns.
// (Each was a statement and a commit of its own.)
func TestConcurrentWritesShareStatements(t *testing.T) {
	j, st := tracedJournal(t)
	ctx := context.Background()
	const n = 60
	now := time.Now()
	for i := range n {
		e, err := outbox.NewEntry(outbox.Op{Key: fmt.Sprint("k", i), Kind: "send"}, now, 0)
		require.NoError(t, err)
		require.NoError(t, j.Add(ctx, e))
	}
	es, err := j.Claim(ctx, outbox.ClaimRequest{Owner: "me", Kinds: []string{"send"}, Now: now.Add(time.Second),
		Until: now.Add(time.Hour), Limit: n, Count: true})
	require.NoError(t, err)
	require.Len(t, es, n)
	before := st.count(updateSQL)

	errs := make([]error, n+1)
	var wg sync.WaitGroup
	for i, e := range es {
		wg.Go(func() {
			switch {
			case i%3 == 0: // the outcome of a success
				e.State, e.Finished, e.Next = outbox.Succeeded, now, time.Time{}
				errs[i] = j.Update(ctx, e)
			case i%3 == 1: // given back
				errs[i] = j.Release(ctx, e)
			case i == 2: // a lease another process took since
				e.Lease = "someone else#1"
				errs[i] = j.Update(ctx, e)
			default: // a failed attempt: pending, next time later
				e.Next, e.LastError = now.Add(time.Minute), "503"
				errs[i] = j.Update(ctx, e)
			}
		})
	}
	wg.Go(func() {
		e := es[0]
		e.Op.Key = "not there"
		errs[n] = j.Update(ctx, e)
	})
	wg.Wait()

	for i := range n {
		if i == 2 {
			assert.ErrorIs(t, errs[i], outbox.ErrLeaseLost, "the stale lease's write")
			continue
		}
		assert.NoError(t, errs[i], "write %d", i)
	}
	assert.ErrorContains(t, errs[n], "does not hold")
	statements := st.count(updateSQL) - before
	assert.Less(t, statements, n/2, "statements for %d concurrent writes", n+1)
	t.Logf("%d writes in %d statements", n+1, statements)

	got, err := j.Load(ctx)
	require.NoError(t, err)
	byKey := map[string]outbox.Entry{}
	for _, e := range got {
		byKey[e.Op.Key] = e
	}
	for i, e := range es {
		g := byKey[e.Op.Key]
		switch {
		case i%3 == 0:
			assert.Equal(t, outbox.Succeeded, g.State, "op %d", i)
			assert.Empty(t, g.Lease, "a finished op's lease ends with its outcome")
		case i%3 == 1:
			assert.Equal(t, outbox.Pending, g.State)
			assert.Empty(t, g.Lease, "released")
		case i == 2:
			assert.Equal(t, e.Lease, g.Lease, "untouched by the stale write")
			assert.Empty(t, g.LastError)
		default:
			assert.Equal(t, "503", g.LastError)
			assert.Equal(t, e.Lease, g.Lease, "a pending outcome keeps its lease")
			assert.WithinDuration(t, now.Add(time.Minute), g.Next, time.Millisecond)
		}
	}
}
