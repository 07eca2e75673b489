package outbox_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
)

// Small ops that finished long ago are all the file holds that compaction
// can reclaim: it runs, and the file (and a restart's replay) stops
// growing with the ops a journal has ever run.
func TestFileJournalCompactsSmallFinishedOps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, path)
	outbox.SetCompactAt(j, 64<<10)
	finished := time.Now().Add(-48 * time.Hour)
	largest := int64(0)
	compactions := 0
	for i := range 4096 {
		e := entry(fmt.Sprintf("%026d", i), i) // as long as a key Enqueue makes
		e.Op.Payload = []byte(fmt.Sprintf(`{"n":%d}`, i))
		require.NoError(t, j.Add(ctx, e))
		e.Attempts = 1
		require.NoError(t, j.Update(ctx, e))
		e.State, e.Finished = outbox.Succeeded, finished
		e.Trace = retry.NewTrace(retry.StopNone, []retry.Attempt{{Number: 1, Start: finished.Add(-time.Second), Duration: 40 * time.Millisecond}})
		size := outbox.Size(j)
		require.NoError(t, j.Update(ctx, e))
		if outbox.Size(j) < size {
			compactions++
		}
		largest = max(largest, outbox.Size(j))
	}
	assert.Positive(t, compactions, "compactions (size %d, live %d)", outbox.Size(j), outbox.Live(j))
	assert.Less(t, largest, int64(2*64<<10), "the file stays within twice the least size to compact")
	require.NoError(t, j.Close())
	assert.Less(t, len(load(t, openJournal(t, path))), 4096, "ops finished long ago were dropped")
}
