package outbox

import (
	"slices"
	"time"
)

// shrinkMin is the fewest ops a sweep must forget before shrink rebuilds
// what held them: below it the space left is too small to be worth a copy.
const shrinkMin = 256

// shrink gives back the space of the ops a sweep just forgot (forgot of
// them): a Go map keeps the buckets of its deleted keys, and a slice its
// capacity, so that after a burst of a million ops an Outbox would hold
// tens of megabytes for ops it no longer knows. When the sweep forgot
// more than the ops it kept, o.ops is copied into a map of its size, and
// each heap whose capacity is over four times its length into a slice of
// its length. It runs once per sweep, at most once an hour, so the copy,
// linear in the ops kept, is paid once for at least as many ops forgotten.
// o.mu is held.
func (o *Outbox) shrink(forgot int) {
	if forgot < shrinkMin || forgot < len(o.ops) {
		return
	}
	ops := make(map[string]*item, len(o.ops))
	for k, p := range o.ops {
		ops[k] = p
	}
	o.ops = ops
	o.due = clipHeap(o.due)
	o.byAge = clipHeap(o.byAge)
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
// at most once every sweepEvery, from an Add or an Update, and gives the
// map's space back as shrink does. j.mu is held.
func (j *FileJournal) forgetExpired(now time.Time) {
	if d := now.Sub(j.swept); d >= 0 && d < sweepEvery {
		return
	}
	j.swept = now
	forgot := 0
	for k, e := range j.entries {
		if expired(&e.Entry, now) {
			j.live -= e.live
			delete(j.entries, k)
			forgot++
		}
	}
	if forgot >= shrinkMin && forgot >= len(j.entries) {
		entries := make(map[string]*fileEntry, len(j.entries))
		for k, e := range j.entries {
			entries[k] = e
		}
		j.entries = entries
	}
}
