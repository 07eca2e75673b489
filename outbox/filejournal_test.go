package outbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox"
)

func openJournal(t *testing.T, path string) *outbox.FileJournal {
	t.Helper()
	j, err := outbox.OpenFile(path)
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	return j
}

func entry(key string, n int) outbox.Entry {
	at := time.Unix(1_700_000_000, int64(n)*1000)
	return outbox.Entry{
		Op:       outbox.Op{Key: key, Kind: "send", Payload: []byte(fmt.Sprintf("payload %d", n)), NotAfter: at.Add(24 * time.Hour)},
		State:    outbox.Pending,
		Next:     at,
		Enqueued: at,
	}
}

func load(t *testing.T, j outbox.Journal) []outbox.Entry {
	t.Helper()
	es, err := j.Load(context.Background())
	require.NoError(t, err)
	return es
}

func sameEntries(t *testing.T, want, got []outbox.Entry) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].Op.Key, got[i].Op.Key, "entry %d", i)
		assert.Equal(t, want[i].Op.Payload, got[i].Op.Payload, "entry %d", i)
		assert.True(t, want[i].Op.NotAfter.Equal(got[i].Op.NotAfter), "entry %d NotAfter", i)
		assert.True(t, want[i].Next.Equal(got[i].Next), "entry %d Next", i)
		assert.Equal(t, want[i].State, got[i].State, "entry %d", i)
		assert.Equal(t, want[i].Attempts, got[i].Attempts, "entry %d", i)
		assert.Equal(t, want[i].LastError, got[i].LastError, "entry %d", i)
	}
}

func TestFileJournalReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, path)
	a, b := entry("a", 1), entry("b", 2)
	require.NoError(t, j.Add(ctx, a))
	require.NoError(t, j.Add(ctx, b))
	a.Attempts, a.LastWait, a.Reason, a.LastError = 2, time.Second, "503", "boom"
	a.Next = a.Next.Add(time.Second)
	require.NoError(t, j.Update(ctx, a))
	b.State, b.Attempts, b.Finished = outbox.Succeeded, 1, time.Now()
	require.NoError(t, j.Update(ctx, b))
	require.NoError(t, j.Close())

	got := load(t, openJournal(t, path))
	b.Op.Payload = nil // a succeeded op's payload is not kept: its key and kind are enough
	sameEntries(t, []outbox.Entry{a, b}, got)
	assert.Equal(t, time.Second, got[0].LastWait)
	assert.Equal(t, "503", got[0].Reason)
}

func TestFileJournalErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := openJournal(t, filepath.Join(t.TempDir(), "journal"))
	require.NoError(t, j.Add(ctx, entry("a", 1)))
	assert.ErrorIs(t, j.Add(ctx, entry("a", 2)), outbox.ErrDuplicate)
	assert.ErrorIs(t, j.Update(ctx, entry("nope", 1)), outbox.ErrUnknownKey)
	assert.ErrorIs(t, j.Add(ctx, entry("bad key", 1)), outbox.ErrInvalidOp)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, j.Add(canceled, entry("b", 1)), context.Canceled)
	require.NoError(t, j.Close())
	assert.ErrorIs(t, j.Add(ctx, entry("c", 1)), outbox.ErrClosed)
	_, err := j.Load(ctx)
	assert.ErrorIs(t, err, outbox.ErrClosed)
}

// A second OpenFile of an open journal fails with a clear error, and
// succeeds once the first is closed.
func TestFileJournalLocked(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal")
	j, err := outbox.OpenFile(path)
	require.NoError(t, err)
	_, err = outbox.OpenFile(path)
	require.ErrorIs(t, err, outbox.ErrLocked)
	assert.Contains(t, err.Error(), path)
	require.NoError(t, j.Close())
	j2, err := outbox.OpenFile(path)
	require.NoError(t, err)
	require.NoError(t, j2.Close())
}

// A crash mid-append leaves the last record torn at any byte: recovery
// keeps every record before it, and the journal takes appends after it.
func TestFileJournalTornTail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "journal")
	j := openJournal(t, path)
	want := []outbox.Entry{entry("a", 1), entry("b", 2)}
	for _, e := range want {
		require.NoError(t, j.Add(ctx, e))
	}
	before := outbox.Size(j)
	last := entry("c", 3)
	last.Op.Payload = make([]byte, 300) // a length that needs a two-byte varint
	require.NoError(t, j.Add(ctx, last))
	require.NoError(t, j.Close())
	full, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, int64(len(full)), before)

	for cut := before; cut < int64(len(full)); cut++ {
		p := filepath.Join(dir, fmt.Sprintf("torn-%d", cut))
		require.NoError(t, os.WriteFile(p, full[:cut], 0o600))
		j, err := outbox.OpenFile(p)
		require.NoError(t, err, "cut at %d", cut)
		sameEntries(t, want, load(t, j))
		require.Equal(t, before, outbox.Size(j), "cut at %d: the torn tail is cut", cut)
		// Appends go after the last good record, and survive a reopen.
		require.NoError(t, j.Add(ctx, entry("d", 4)), "cut at %d", cut)
		require.NoError(t, j.Close())
		j = openJournal(t, p)
		sameEntries(t, append(want[:2:2], entry("d", 4)), load(t, j))
		require.NoError(t, j.Close())
		require.NoError(t, os.Remove(p))
	}
}

// A crash leaves the space the journal reserved ahead as a zero tail, a
// torn record may sit before it, and a record of the same write that did
// reach the disk may sit beyond: recovery keeps every good record, stops
// at the zeros or the tear, and later appends never bring the stray
// record back, however far they reach.
func TestFileJournalZeroTail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "journal")
	j := openJournal(t, path)
	want := []outbox.Entry{entry("a", 1), entry("b", 2)}
	for _, e := range want {
		require.NoError(t, j.Add(ctx, e))
	}
	before := outbox.Size(j)
	require.NoError(t, j.Add(ctx, entry("c", 3)))
	mid := outbox.Size(j)
	require.NoError(t, j.Close())
	full, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, int64(len(full)), outbox.Size(j), "a clean Close leaves no zero tail")
	// The stray record is of c's write (the third), as a group commit of
	// c and it would write them: it comes from another journal's third.
	other := openJournal(t, filepath.Join(dir, "other"))
	require.NoError(t, other.Add(ctx, entry("x", 7)))
	require.NoError(t, other.Add(ctx, entry("y", 8)))
	at := outbox.Size(other)
	require.NoError(t, other.Add(ctx, entry("stray", 9)))
	require.NoError(t, other.Close())
	img, err := os.ReadFile(filepath.Join(dir, "other"))
	require.NoError(t, err)
	stray := img[at:]

	for _, cut := range []int64{before, before + 1, before + 9, mid - 12} {
		require.NotEqual(t, make([]byte, mid-cut), full[cut:mid], "the cut zeroes some of c")
		img := append([]byte(nil), full[:cut]...)
		img = append(img, make([]byte, mid-cut)...) // the torn rest of c reads as zeros
		img = append(img, stray...)                 // a record never synced
		img = append(img, make([]byte, 64<<10)...)  // the reserved tail
		p := filepath.Join(dir, fmt.Sprintf("zero-%d", cut))
		require.NoError(t, os.WriteFile(p, img, 0o600))
		j, err := outbox.OpenFile(p)
		require.NoError(t, err, "cut at %d", cut)
		sameEntries(t, want, load(t, j))
		require.Equal(t, before, outbox.Size(j), "cut at %d", cut)
		// Appends fill the space where c and the stray record were.
		for i := range 4 {
			require.NoError(t, j.Add(ctx, entry(fmt.Sprintf("d%d", i), 4+i)), "cut at %d", cut)
		}
		require.NoError(t, j.Close())
		j = openJournal(t, p)
		got := load(t, j)
		require.Len(t, got, 6, "cut at %d: the stray record stays gone", cut)
		for _, e := range got {
			assert.NotEqual(t, "stray", e.Op.Key, "cut at %d", cut)
		}
		require.NoError(t, j.Close())
	}
}

// A flipped bit in the last record fails its checksum: the record is dropped.
func TestFileJournalBadChecksum(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, path)
	require.NoError(t, j.Add(ctx, entry("a", 1)))
	require.NoError(t, j.Add(ctx, entry("b", 2)))
	require.NoError(t, j.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[len(b)-3] ^= 0x10
	require.NoError(t, os.WriteFile(path, b, 0o600))
	sameEntries(t, []outbox.Entry{entry("a", 1)}, load(t, openJournal(t, path)))
}

// Concurrent appenders all get their records durable (one sync carries
// many): every Add that returned is there after a reopen.
func TestFileJournalGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, path)
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			e := entry(fmt.Sprintf("k%d", i), i)
			assert.NoError(t, j.Add(ctx, e))
			e.Attempts = 1
			assert.NoError(t, j.Update(ctx, e))
		})
	}
	wg.Wait()
	require.NoError(t, j.Close())
	got := load(t, openJournal(t, path))
	require.Len(t, got, n)
	for _, e := range got {
		assert.Equal(t, 1, e.Attempts, e.Op.Key)
	}
}

// Compaction keeps each op's latest state, drops ops that succeeded more
// than a day ago, and shrinks the file.
func TestFileJournalCompaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, path)
	live, old, recent := entry("live", 1), entry("old", 2), entry("recent", 3)
	for _, e := range []outbox.Entry{live, old, recent} {
		require.NoError(t, j.Add(ctx, e))
	}
	old.State, old.Finished = outbox.Succeeded, time.Now().Add(-25*time.Hour)
	require.NoError(t, j.Update(ctx, old))
	recent.State, recent.Finished = outbox.Succeeded, time.Now()
	require.NoError(t, j.Update(ctx, recent))
	for i := range 200 {
		live.Attempts = i
		require.NoError(t, j.Update(ctx, live))
	}
	grown := outbox.Size(j)
	outbox.SetCompactAt(j, grown)
	live.Attempts = 200
	require.NoError(t, j.Update(ctx, live))
	assert.Less(t, outbox.Size(j), grown/4, "compacted")
	require.NoError(t, j.Close())

	_, err := os.Stat(path + ".compact")
	assert.ErrorIs(t, err, os.ErrNotExist)
	j = openJournal(t, path)
	got := load(t, j)
	recent.Op.Payload = nil // a succeeded op is kept by its key only
	sameEntries(t, []outbox.Entry{live, recent}, got)
	// The lock moved to the new file.
	_, err = outbox.OpenFile(path)
	assert.ErrorIs(t, err, outbox.ErrLocked)
}

// A journal whose ops are all live is not rewritten, however large: a
// compaction would win nothing.
func TestFileJournalNoCompactionOfLiveOps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, path)
	outbox.SetCompactAt(j, 1)
	require.NoError(t, j.Add(ctx, entry("k0", 0)))
	before, err := os.Stat(path)
	require.NoError(t, err)
	for i := 1; i < 200; i++ {
		require.NoError(t, j.Add(ctx, entry(fmt.Sprintf("k%d", i), i)))
	}
	after, err := os.Stat(path)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "the file was not replaced")
	// Updates make it twice what its ops need: then it is. (The journal's
	// size drops then; a file's identity cannot tell, since a file system
	// may give the second compaction's file the first file's inode.)
	compacted := false
	for n := 1; n <= 6; n++ {
		for i := range 200 {
			e := entry(fmt.Sprintf("k%d", i), i)
			e.Attempts = n
			size := outbox.Size(j)
			require.NoError(t, j.Update(ctx, e))
			compacted = compacted || outbox.Size(j) < size
		}
	}
	assert.True(t, compacted, "the file was compacted (size %d, live %d)", outbox.Size(j), outbox.Live(j))
	assert.Len(t, load(t, j), 200)
}

// The lock file of systems without flock: a second lock fails with
// ErrLocked until the first is released.
func TestLockByFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal")
	unlock, err := outbox.LockByFile(path)
	require.NoError(t, err)
	_, err = outbox.LockByFile(path)
	require.ErrorIs(t, err, outbox.ErrLocked)
	assert.Contains(t, err.Error(), path+".lock")
	require.NoError(t, unlock())
	unlock, err = outbox.LockByFile(path)
	require.NoError(t, err)
	require.NoError(t, unlock())
}
