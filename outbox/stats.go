package outbox

import (
	"container/heap"
	"time"
)

// Stats is a count of an Outbox's ops at one moment, as [Outbox.Stats]
// returns it. Pending, Running and Failed do not overlap.
type Stats struct {
	Pending int // waiting for their next attempt (or for a handler of their kind)
	Running int // in an attempt now: a handler call and the writes around it
	Failed  int // dead letters: given up, held until re-driven
	// OldestPending is the age, since Enqueue, of the oldest op not
	// finished (pending or running); 0 when there is none. An op that
	// waits long past its backoff shows here first: a handler that is
	// never set, a Run that is not running, a downstream that is down.
	OldestPending time.Duration
}

// Stats returns the counts of o's ops and the age of the oldest one not
// finished. It reads counters the Outbox keeps as ops move, never the
// journal, so that a metrics scrape or a debug page may call it often.
// It counts the ops this Outbox holds. Over a [CountingJournal] (such as
// pgjournal's) that Run polls, it counts the whole journal instead, as of
// Run's latest poll: every process's ops and those of EnqueueTx, so that
// an alert on OldestPending sees them. Over another [SharedJournal], or
// before Run's first poll, it counts the ops enqueued here and not yet
// finished (pending), the attempts under way here, of ops enqueued
// anywhere (running), and the dead letters recorded or re-driven here
// since it started (failed).
func (o *Outbox) Stats() Stats {
	now := o.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counted {
		s := Stats{Pending: o.counts.Pending, Running: o.counts.Running, Failed: o.counts.Failed}
		if !o.counts.OldestPending.IsZero() {
			s.OldestPending = max(now.Sub(o.counts.OldestPending), 0)
		}
		return s
	}
	s := Stats{Pending: max(o.unfinished-o.inCallOwn, 0), Running: o.inCall, Failed: o.failed}
	if len(o.byAge) > 0 {
		s.OldestPending = max(now.Sub(o.byAge[0].e.Enqueued), 0)
	}
	return s
}

// callStarted counts p as running, and returns the number of this call
// of p. o.mu is held.
func (o *Outbox) callStarted(p *item) uint64 {
	p.inCall, p.inCallOwn = true, p.counted
	p.call++
	o.inCall++
	if p.inCallOwn {
		o.inCallOwn++
	}
	return p.call
}

// callEnded counts p as no longer running, once: as soon as its attempt's
// outcome is settled, so that a Wait that returns never sees it running.
// o.mu is held.
func (o *Outbox) callEnded(p *item) {
	if p.inCall {
		p.inCall = false
		o.inCall--
		if p.inCallOwn {
			p.inCallOwn = false
			o.inCallOwn--
		}
	}
}

// unfinishedAdd counts p as not finished. o.mu is held.
func (o *Outbox) unfinishedAdd(p *item) {
	if p.dead {
		p.dead = false
		o.failed--
	}
	if !p.counted {
		p.counted = true
		o.unfinished++
		heap.Push(&o.byAge, p)
	}
}

// unfinishedDone counts p as finished as s. o.mu is held.
func (o *Outbox) unfinishedDone(p *item, s State) {
	if !p.counted {
		return // claimed from a shared journal, not enqueued here
	}
	p.counted = false
	o.unfinished--
	if p.ageIndex >= 0 {
		heap.Remove(&o.byAge, p.ageIndex)
	}
	if s == Failed {
		p.dead = true
		o.failed++
	}
}
