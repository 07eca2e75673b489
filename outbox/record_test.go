package outbox_test

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
)

// Every time comes back whole after a reopen: one past 2262 (where Unix
// nanoseconds wrap) as well as one before 1970 and the zero time.
func TestFileJournalTimesPast2262(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, path)
	far := time.Date(2300, 1, 2, 3, 4, 5, 6, time.UTC)
	e := entry("far", 1)
	e.Op.NotAfter = far
	require.NoError(t, j.Add(ctx, e))
	e.Next, e.Finished = far.Add(time.Hour), time.Date(1969, 7, 20, 20, 17, 40, 999_999_999, time.UTC)
	e.Trace = retry.NewTrace(retry.StopNone, []retry.Attempt{{Number: 1, Start: far.Add(-time.Minute), Duration: time.Second}})
	require.NoError(t, j.Update(ctx, e))
	require.NoError(t, j.Close())

	got := load(t, openJournal(t, path))
	require.Len(t, got, 1)
	for _, c := range []struct {
		name      string
		got, want time.Time
	}{
		{"NotAfter", got[0].Op.NotAfter, e.Op.NotAfter},
		{"Next", got[0].Next, e.Next},
		{"Finished", got[0].Finished, e.Finished},
		{"Enqueued", got[0].Enqueued, e.Enqueued},
	} {
		assert.True(t, c.got.Equal(c.want), "%s = %v, want %v", c.name, c.got, c.want)
	}
	var starts []time.Time
	for a := range got[0].Trace.All() {
		starts = append(starts, a.Start)
	}
	require.Len(t, starts, 1)
	assert.True(t, starts[0].Equal(far.Add(-time.Minute)), "Trace's Start = %v, want %v", starts[0], far.Add(-time.Minute))
}

// oldRecord frames a record of the format before times were whole (types
// 1 and 2, times as Unix nanoseconds), with no Trace.
func oldRecord(typ byte, e outbox.Entry) []byte {
	str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	tm := func(b []byte, t time.Time) []byte {
		if t.IsZero() {
			return binary.AppendVarint(b, 0)
		}
		return binary.AppendVarint(b, t.UnixNano())
	}
	p := str([]byte{typ}, e.Op.Key)
	if typ == 1 {
		p = str(p, e.Op.Kind)
		p = str(p, string(e.Op.Payload))
		p = tm(p, e.Enqueued)
	}
	p = tm(p, e.Op.NotAfter)
	p = binary.AppendUvarint(p, uint64(e.State))
	p = binary.AppendVarint(p, int64(e.Attempts))
	p = tm(p, e.Next)
	p = binary.AppendVarint(p, int64(e.LastWait))
	p = tm(p, e.Finished)
	p = str(p, e.Reason)
	p = str(p, e.LastError)
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(p)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)))
	return append(b, p...)
}

// A journal written before times were whole opens, and takes appends.
func TestFileJournalReadsOldTimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	a, b := entry("a", 1), entry("b", 2)
	img := oldRecord(1, a)
	img = append(img, oldRecord(1, b)...)
	a.Attempts, a.LastError = 1, "boom"
	img = append(img, oldRecord(2, a)...)
	require.NoError(t, os.WriteFile(path, img, 0o600))

	j := openJournal(t, path)
	sameEntries(t, []outbox.Entry{a, b}, load(t, j))
	c := entry("c", 3)
	c.Op.NotAfter = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, j.Add(ctx, c))
	require.NoError(t, j.Close())
	sameEntries(t, []outbox.Entry{a, b, c}, load(t, openJournal(t, path)))
}
