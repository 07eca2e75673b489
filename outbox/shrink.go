package outbox

import (
	"slices"
	"time"
)

// shrinkMin is the fewest ops a sweep must forget before shrink rebuilds
// what held them: below it the space left is too small to be worth a copy.
const shrinkMin = 256

// sweep deletes from m the entries forget reports, at most once every
// sweepEvery (*swept is when it last looked), and returns m; when it forgot
// at least shrinkMin entries and more than it kept, m is copied into a map
// of its size, and shrunk is true: a Go map keeps the buckets of its
// deleted keys, so that after a burst of a million ops the Outbox and the
// FileJournal would hold tens of megabytes for ops they no longer know.
// It runs at most once an hour, so the copy, linear in the entries kept,
// is paid once for at least as many forgotten. The caller's lock is held.
func sweep[V any](m map[string]V, swept *time.Time, now time.Time, forget func(V) bool) (_ map[string]V, shrunk bool) {
	if d := now.Sub(*swept); d >= 0 && d < sweepEvery {
		return m, false
	}
	*swept = now
	forgot := 0
	for k, v := range m {
		if forget(v) {
			delete(m, k)
			forgot++
		}
	}
	if forgot < shrinkMin || forgot < len(m) {
		return m, false
	}
	kept := make(map[string]V, len(m))
	for k, v := range m {
		kept[k] = v
	}
	return kept, true
}

// clipHeap returns h in a slice of its length, if its capacity is over
// four times that; the items' places in it do not change.
func clipHeap[O heapOrder](h itemHeap[O]) itemHeap[O] {
	if cap(h) <= 4*len(h) || cap(h) < shrinkMin {
		return h
	}
	return slices.Clone(h)
}

// forgetExpired drops from memory the ops that succeeded longer than the
// retention ago, as the Outbox does (see [Outbox.forgetExpired]): without
// it, each would stay in j.entries until the next compaction, which an
// idle journal never reaches. Their records stay in the file until then;
// taking their size off j.live brings that compaction nearer. It looks
// at most once every sweepEvery, from an Add or an Update. j.mu is held.
func (j *FileJournal) forgetExpired(now time.Time) {
	j.entries, _ = sweep(j.entries, &j.swept, now, func(e *fileEntry) bool {
		if !expired(&e.Entry, now) {
			return false
		}
		j.live -= e.live
		return true
	})
}
