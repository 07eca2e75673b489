package outbox_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox"
)

// A write that fails after its records reached the file (a sync that
// failed, or a write cut short past whole records, as a full disk or
// RLIMIT_FSIZE cuts it) is undone: the batch fails, so does the batch
// that waited for it, unwritten, and every later call; after a reopen
// only what was acknowledged is there, so a retried Enqueue cannot bring
// the op back under a second key.
func TestFileJournalFailedWriteIsUndone(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "journal")
		j, err := outbox.OpenFile(path)
		require.NoError(t, err)
		defer j.Close()
		require.NoError(t, j.Add(ctx, entry("a", 1)))
		durable := outbox.Size(j)

		entered, release := make(chan struct{}), make(chan struct{})
		var writes atomic.Int32
		outbox.SetWriteAt(j, func(f *os.File, b []byte, off int64) (int, error) {
			if writes.Add(1) > 1 {
				return f.WriteAt(b, off)
			}
			entered <- struct{}{}
			<-release
			n, err := f.WriteAt(b, off) // every record of the batch lands
			require.NoError(t, err)
			return n, syscall.EFBIG
		})
		failed := make(chan error, 3)
		go func() { failed <- j.Add(ctx, entry("b", 2)) }()
		<-entered // b's write is under way
		go func() { failed <- j.Add(ctx, entry("c", 3)) }()
		go func() { failed <- j.Add(ctx, entry("d", 4)) }()
		synctest.Wait() // c and d wait in the next batch
		close(release)
		for range 3 {
			assert.ErrorIs(t, <-failed, syscall.EFBIG)
		}
		assert.Equal(t, int32(1), writes.Load(), "nothing is written after a failed write")
		assert.ErrorIs(t, j.Add(ctx, entry("e", 5)), syscall.EFBIG, "the journal stays failed")
		assert.ErrorIs(t, j.Update(ctx, entry("a", 1)), syscall.EFBIG)
		_, err = j.Load(ctx)
		assert.ErrorIs(t, err, syscall.EFBIG, "Load does not list ops whose Add failed")
		require.NoError(t, j.Close())

		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, durable, st.Size(), "the file is as it was before the failed batch")
		j = openJournal(t, path)
		sameEntries(t, []outbox.Entry{entry("a", 1)}, load(t, j))
		require.NoError(t, j.Add(ctx, entry("b", 2)), "the same op, added again after a reopen")
	})
}
