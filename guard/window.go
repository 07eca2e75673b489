package guard

import (
	"sync/atomic"
	"time"

	"github.com/stormguard/retry/internal/coarse"
)

// windowBuckets is how many buckets a sliding window is cut into: the
// window forgets its oldest sixteenth at a time.
const windowBuckets = 16

// window counts two numbers over a sliding span of time, without a lock: a
// total and a marked part of it (requests and accepts, calls and failures).
// Each bucket holds one sixteenth of the span; a bucket whose epoch is out
// of date is reset by the first writer that finds it so. A write that races
// the reset may be lost, which a rate over thousands of events does not
// notice. The zero window is empty. Its owner passes the width of a bucket,
// in nanoseconds, to each method.
type window struct {
	// last is the epoch of the latest write or sum: most calls fall in
	// it, and testing that costs a multiplication where the epoch's own
	// division costs tens of cycles.
	last    atomic.Int64
	buckets [windowBuckets]struct {
		epoch  atomic.Int64  // which width-long slice of time the counts are for
		counts atomic.Uint64 // total<<32 | marked
	}
}

// bucketWidth is the width of a bucket of a window that spans span.
func bucketWidth(span time.Duration) int64 { return max(int64(span)/windowBuckets, 1) }

// epoch returns the epoch of time t: which width-long slice of time it is
// in.
func (w *window) epoch(t time.Time, width int64) int64 { return w.epochNs(coarse.Nanos(t), width) }

// epochNs is epoch for a time in UnixNano.
func (w *window) epochNs(ns, width int64) int64 {
	if e := w.last.Load(); ns >= e*width && ns-e*width < width {
		return e
	}
	e := ns / width
	if ns%width < 0 { // before coarse's origin: round down, as for a time after it
		e--
	}
	w.last.Store(e)
	return e
}

// add counts total and marked at time t.
func (w *window) add(t time.Time, width int64, total, marked uint64) {
	w.addIn(w.epoch(t, width), total, marked)
}

// addIn counts total and marked in epoch e, which its caller got from
// epochNs: a caller that counts twice at one time computes it once.
func (w *window) addIn(e int64, total, marked uint64) {
	if !w.addCur(e, total<<32|marked) {
		w.addNew(e, total<<32|marked)
	}
}

// addCur is addIn's fast path, small enough to inline into the hot paths:
// it adds delta (total<<32 | marked) to e's bucket if that bucket is
// already e's, and reports whether it did; if not, the caller calls addNew.
func (w *window) addCur(e int64, delta uint64) bool {
	b := &w.buckets[uint64(e)%windowBuckets]
	if b.epoch.Load() != e {
		return false
	}
	b.counts.Add(delta)
	return true
}

// addNew is addIn to a bucket that was last written in another epoch than
// e, kept out of it so that it inlines.
func (w *window) addNew(e int64, delta uint64) {
	b := &w.buckets[uint64(e)%windowBuckets]
	if old := b.epoch.Load(); old != e {
		if old > e && old-e < windowBuckets { // a late write for a bucket already reused: drop it
			return
		}
		// A bucket a whole window or more in the future is from before
		// the clock stepped back (a fake clock set back; the real one
		// counts on its monotonic reading): never trust it, take it over,
		// or every count would be dropped until the clock caught up.
		if !b.epoch.CompareAndSwap(old, e) {
			if b.epoch.Load() > e {
				return
			}
			b.counts.Add(delta) // another writer reset it
			return
		}
		b.counts.Store(delta)
		return
	}
	b.counts.Add(delta)
}

// sum returns the totals of the window that ends at t.
func (w *window) sum(t time.Time, width int64) (total, marked uint64) {
	e := w.epoch(t, width)
	for i := range w.buckets {
		b := &w.buckets[i]
		if d := e - b.epoch.Load(); d >= 0 && d < windowBuckets {
			c := b.counts.Load()
			total += c >> 32
			marked += c & (1<<32 - 1)
		}
	}
	return total, marked
}

// reset empties the window.
func (w *window) reset() {
	for i := range w.buckets {
		w.buckets[i].counts.Store(0)
	}
}
