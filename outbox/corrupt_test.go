package outbox_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox"
)

// recordOffsets lists where each record of a journal file starts, after
// its 8-byte header (if it has one).
func recordOffsets(t *testing.T, b []byte) []int {
	t.Helper()
	var at []int
	p := 0
	if len(b) > 0 && b[0] == 0x89 {
		p = 8
	}
	for p+8 <= len(b) {
		n := int(binary.LittleEndian.Uint32(b[p:]))
		if n == 0 {
			break
		}
		at = append(at, p)
		p += 8 + n
	}
	return at
}

// A flipped bit before the tail is not a crash's doing: OpenFile refuses
// the journal, says where, and leaves the file as it was, rather than cut
// away the 190 acknowledged ops after it.
func TestFileJournalCorruptBeforeTheTail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, path)
	for i := range 200 {
		require.NoError(t, j.Add(ctx, entry(fmt.Sprintf("k%d", i), i)))
	}
	require.NoError(t, j.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	at := recordOffsets(t, b)
	require.Len(t, at, 200)
	b[at[10]+12] ^= 0x04 // in record 10's payload
	require.NoError(t, os.WriteFile(path, b, 0o600))

	_, err = outbox.OpenFile(path)
	require.ErrorIs(t, err, outbox.ErrCorrupt)
	assert.Contains(t, err.Error(), "at byte "+strconv.Itoa(at[10]))
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, b, after, "the file is left as it was")
	// Still refused, and still untouched, the second time.
	_, err = outbox.OpenFile(path)
	require.ErrorIs(t, err, outbox.ErrCorrupt)
}

// A file that is not a journal is refused, never truncated.
func TestFileJournalNotAJournal(t *testing.T) {
	t.Parallel()
	for _, content := range []string{"hello", "hello, world: a text file of some length\n", "\x00\x00\x00\x00hello"} {
		t.Run(strconv.Quote(content), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "journal")
			require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
			_, err := outbox.OpenFile(path)
			require.ErrorIs(t, err, outbox.ErrCorrupt)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, content, string(got), "the file is left as it was")
		})
	}
}

// A journal of the format before the header opens, and is rewritten with
// it: the upgrade is one-way. One whose bad record is followed by a good
// one is refused, as it cannot tell a torn write from a lost one.
func TestFileJournalUpgradesTheOldFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "journal")
	a, b := entry("a", 1), entry("b", 2)
	img := append(oldRecord(1, a), oldRecord(1, b)...)
	require.NoError(t, os.WriteFile(path, img, 0o600))
	j := openJournal(t, path)
	sameEntries(t, []outbox.Entry{a, b}, load(t, j))
	require.NoError(t, j.Close())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "\x89OBXJNL\x01", string(got[:8]), "the header")
	sameEntries(t, []outbox.Entry{a, b}, load(t, openJournal(t, path)))

	bad := filepath.Join(dir, "bad")
	img = append(oldRecord(1, a), oldRecord(1, b)...)
	img[len(oldRecord(1, a))+10] ^= 0x01 // in b, with c after it
	img = append(img, oldRecord(1, entry("c", 3))...)
	require.NoError(t, os.WriteFile(bad, img, 0o600))
	_, err = outbox.OpenFile(bad)
	require.ErrorIs(t, err, outbox.ErrCorrupt)
	got, err = os.ReadFile(bad)
	require.NoError(t, err)
	assert.Equal(t, img, got, "the file is left as it was")
}

// The file of a journal whose creation a crash cut short (an empty file,
// or part of the header) opens as a new journal.
func TestFileJournalCutHeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for n := range 8 {
		path := filepath.Join(t.TempDir(), "journal")
		require.NoError(t, os.WriteFile(path, []byte("\x89OBXJNL\x01"[:n]), 0o600))
		j, err := outbox.OpenFile(path)
		require.NoError(t, err, "%d bytes of header", n)
		require.NoError(t, j.Add(ctx, entry("a", 1)))
		require.NoError(t, j.Close())
		sameEntries(t, []outbox.Entry{entry("a", 1)}, load(t, openJournal(t, path)))
	}
}
