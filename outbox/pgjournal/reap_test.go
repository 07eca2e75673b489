package pgjournal_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/outbox/journaltest"
)

// Reap deletes the ops that succeeded more than the retention ago, and
// nothing else; DeadLetters reads the failed rows alone, through the
// Outbox too. (pgjournal kept every succeeded row for ever, and the
// Outbox's DeadLetters read the whole table.)
func TestReapAndDeadLetters(t *testing.T) {
	j, _ := newJournal(t)
	ctx := context.Background()
	now := time.Now()
	add := func(key string, n int, s outbox.State, finished time.Time) {
		e := journaltest.Entry(key, n)
		e.State, e.Finished = s, finished
		if s == outbox.Failed {
			e.Reason = "attempts used up"
		}
		require.NoError(t, j.Add(ctx, e))
	}
	add("old-ok", 1, outbox.Succeeded, now.Add(-48*time.Hour))
	add("new-ok", 2, outbox.Succeeded, now.Add(-time.Minute))
	add("old-failed", 3, outbox.Failed, now.Add(-48*time.Hour))
	add("pending", 4, outbox.Pending, time.Time{})

	n, err := j.Reap(ctx, 24*time.Hour)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	es, err := j.Load(ctx)
	require.NoError(t, err)
	var keys []string
	for _, e := range es {
		keys = append(keys, e.Op.Key)
	}
	assert.Equal(t, []string{"new-ok", "old-failed", "pending"}, keys, "only the succeeded op past the retention is gone")

	o, err := outbox.New(j, outbox.Options{})
	require.NoError(t, err)
	dead, err := o.DeadLetters(ctx)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	assert.Equal(t, "old-failed", dead[0].Op.Key)

	_, err = j.Reap(ctx, -time.Second)
	assert.Error(t, err)
}
