package pgjournal

import (
	"sync/atomic"
	"time"
)

// A notice at each commit costs the commits: PostgreSQL takes the
// notification queue's lock for each transaction that notifies, from its
// pre-commit to its commit, so concurrent EnqueueTx transactions that all
// notify commit one at a time (8 goroutines: about 2,500 commits a second
// with a notice each, 7,500 without, on the machine of BENCHMARKS.md). So,
// as River limits its insert notifications, a statement of EnqueueTx or
// Add sends none when another of the Journal's runs at the same moment and
// one sent a notice less than noticeEvery ago: concurrent enqueues share
// notices, and one enqueue at a time always sends its own (its op starts
// at its commit). The ops of the quiet statements are claimed by a second
// claim that every Run makes noticeTrail after each notice it hears
// (listen), which finds what committed shortly after the notice; a
// transaction that commits later than that waits for the next notice or
// the poll.
const (
	noticeEvery = 5 * time.Millisecond
	noticeTrail = 10 * time.Millisecond
)

// notices decides which statements send a notice.
type notices struct {
	last    atomic.Int64  // when the last notice was sent, ns on the monotonic clock since start
	running atomic.Int32  // statements of EnqueueTx and Add running
	every   time.Duration // noticeEvery; a test sets it before first use
	alone   bool          // a test's: a statement alone is quiet too
	trail   time.Duration // noticeTrail; a test's, as every
}

// trailing is how long after a notice Listen wakes once more.
func (n *notices) trailing() time.Duration {
	if n.trail == 0 {
		return noticeTrail
	}
	return n.trail
}

// start is the origin of notices' times: time.Since reads the monotonic
// clock, which a step of the wall clock does not move.
var start = time.Now()

// take reports whether the statement about to run sends a notice; the
// caller calls done when the statement has run.
func (n *notices) take() bool {
	every := n.every
	if every == 0 {
		every = noticeEvery
	}
	concurrent := n.running.Add(1) > 1 || n.alone
	now := int64(time.Since(start)) + int64(every) // never 0, the "none yet"
	last := n.last.Load()
	if concurrent && last != 0 && now-last < int64(every) {
		return false
	}
	n.last.Store(now)
	return true
}

// done ends a statement that take began.
func (n *notices) done() { n.running.Add(-1) }
