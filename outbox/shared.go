package outbox

import (
	"container/heap"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"time"
)

// sharedRun is an Outbox's state for a SharedJournal.
type sharedRun struct {
	j     SharedJournal
	rel   ReleasingJournal // j, when it is one
	owner string
	poll  time.Duration
	lease time.Duration
}

const (
	defaultPollInterval = time.Second
	defaultLease        = 30 * time.Second
	minLease            = 10 * time.Millisecond // renewed each third: bounded load
	minPollInterval     = time.Millisecond
	releaseTimeout      = 5 * time.Second // a Release is a courtesy: bounded
)

func newSharedRun(j SharedJournal, opts Options) (*sharedRun, error) {
	s := &sharedRun{j: j, poll: opts.PollInterval, lease: opts.Lease, owner: ownerName()}
	s.rel, _ = j.(ReleasingJournal)
	switch {
	case s.poll == 0:
		s.poll = defaultPollInterval
	case s.poll < minPollInterval:
		return nil, fmt.Errorf("outbox: Options.PollInterval %v is under %v", s.poll, minPollInterval)
	}
	switch {
	case s.lease == 0:
		s.lease = defaultLease
	case s.lease < minLease:
		return nil, fmt.Errorf("outbox: Options.Lease %v is under %v", s.lease, minLease)
	}
	return s, nil
}

// ownerName names an Outbox in a shared journal's records: host, process
// and a random part, since one process may run several Outboxes.
func ownerName() string {
	host, _ := os.Hostname()
	if len(host) > 64 {
		host = host[:64]
	}
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), rand.Text()[:8])
}

// flight is an attempt that runShared started.
type flight struct {
	p      *item
	cancel context.CancelFunc // cuts the attempt short when its lease is lost
	until  time.Time          // the lease is known to hold until then
	cut    bool               // cancel was called
	called bool               // the handler returned: the attempt holds no slot while its outcome is written
}

// flights are the attempts that runShared started and that have not
// ended, by key.
type flights map[string]*flight

// busy reports whether the op of key has an attempt in flight here.
func (fs flights) busy(key string) bool {
	_, ok := fs[key]
	return ok
}

// slotEvent is what an attempt tells runShared: its handler returned
// (called), or the attempt ended (done). An attempt's events arrive in
// that order, on one channel.
type slotEvent struct {
	key  string
	done bool
}

// runShared is Run over a SharedJournal: it claims due ops instead of
// taking them from the local heap, renews the leases of the attempts it
// runs, and releases the lease of an op that stays pending.
func (o *Outbox) runShared(ctx context.Context) error {
	s := o.shared
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// An attempt holds a slot while its handler runs; then, while its
	// outcome is written, it stays in flight (its lease renewed, its op
	// busy) without one, as River frees a worker before its completion is
	// written: a batch of outcomes commits while the next claim's calls
	// run. At most maxWriting times Concurrency attempts are in flight.
	inFlight := make(flights, maxWriting*o.concurrency)
	running := 0                                               // attempts in flight whose handler has not returned
	events := make(chan slotEvent, 2*maxWriting*o.concurrency) // never blocks: two per attempt in flight
	slots := func() int { return min(o.concurrency-running, maxWriting*o.concurrency-len(inFlight)) }
	onEvent := func(ev slotEvent) {
		if f := inFlight[ev.key]; f != nil && !f.called {
			f.called = true
			running--
		}
		if ev.done {
			delete(inFlight, ev.key)
		}
	}
	claimNow := true // a poll or a wake asks for a claim
	more := false    // the last claim was full: more may be due
	var nextPoll, nextRenew, nextCount, lastClaim time.Time
	var nextDue time.Time // the earliest known due time of an op put back here
	if lj, ok := s.j.(ListeningJournal); ok {
		lctx, stopListen := context.WithCancel(ctx)
		listening := make(chan struct{})
		go func() {
			defer close(listening)
			_ = lj.Listen(lctx, o.poke)
		}()
		defer func() { stopListen(); <-listening }()
	}
	for ctx.Err() == nil {
		o.mu.Lock()
		// In the journal: a claim finds them. An attempt that failed put
		// its op back with its next time: claim again then, not at the
		// next poll, so that a short backoff stays short. The ops stay
		// here until a claim made at or after their time (forgetTaken):
		// one claim must not use up the time of an op due after it. An op
		// whose attempt has not yet given its lease back does not count
		// until it has: a claim before then would not find it.
		nextDue = earliestFree(o.due, inFlight.busy)
		kinds := make([]string, 0, len(o.handlers))
		for k := range o.handlers {
			kinds = append(kinds, k)
		}
		o.mu.Unlock()

		now := o.clock.Now()
		if !now.Before(nextPoll) || !nextDue.IsZero() && !now.Before(dueClaim(nextDue, lastClaim)) {
			claimNow = true
		}
		free := slots()
		// After a full claim, claim again once half the slots are free, not
		// one op at a time: a claim per op would be a statement per op.
		if (claimNow || more && 2*free >= o.concurrency) && free > 0 && len(kinds) > 0 {
			claimNow, more = false, false
			limit := free
			es, err := s.j.Claim(ctx, ClaimRequest{Owner: s.owner, Kinds: kinds, Now: now, Until: now.Add(s.lease), Limit: limit, Count: true})
			if err != nil {
				if ctx.Err() == nil {
					cancel(fmt.Errorf("outbox: claim: %w", err))
				}
				break
			}
			nextPoll, lastClaim = now.Add(s.poll), now
			o.forgetTaken(now, inFlight)
			if !now.Before(nextCount) {
				o.count(ctx, now)
				nextCount = now.Add(s.poll)
			}
			more = len(es) == limit
			if len(inFlight) == 0 {
				nextRenew = now.Add(s.lease / 3)
			}
			for _, e := range es {
				if o.startShared(ctx, cancel, e, now.Add(s.lease), inFlight, events) {
					running++
				}
			}
			if err := o.refresh(ctx, inFlight); err != nil {
				if ctx.Err() == nil {
					cancel(fmt.Errorf("outbox: refresh: %w", err))
				}
				break
			}
		}
		if len(inFlight) > 0 && !now.Before(nextRenew) {
			o.renew(ctx, inFlight, now)
			nextRenew = now.Add(s.lease / 3)
		}
		// An attempt whose lease ran out, its renewals failing, stops: from
		// now on another process may claim the op.
		leaseEnd := time.Time{}
		for _, f := range inFlight {
			switch {
			case f.cut:
			case !now.Before(f.until):
				f.cut = true
				f.cancel()
			case leaseEnd.IsZero() || f.until.Before(leaseEnd):
				leaseEnd = f.until
			}
		}

		// The next poll only when a claim could follow it: with every slot
		// busy, or no handler, a poll would find nothing to do, and the
		// loop waits for an attempt to finish, a wake (Handle, Enqueue) or
		// the next renewal instead, rather than wake at once, again and
		// again.
		var wait time.Duration
		timed := false // a poll or a renewal is due at some time; else only events wake the loop
		if len(kinds) > 0 && slots() > 0 {
			wait, timed = nextPoll.Sub(now), true // overdue (negative) when the loop ran late
			if due := dueClaim(nextDue, lastClaim); !nextDue.IsZero() && due.Sub(now) < wait {
				wait = due.Sub(now)
			}
		}
		if len(inFlight) > 0 && (!timed || nextRenew.Sub(now) < wait) {
			wait, timed = nextRenew.Sub(now), true
		}
		if !leaseEnd.IsZero() && (!timed || leaseEnd.Sub(now) < wait) {
			wait, timed = leaseEnd.Sub(now), true
		}
		var timer <-chan struct{}
		stop := func() {}
		if timed {
			var tctx context.Context
			tctx, stop = o.clock.WithTimeout(context.Background(), max(wait, minPollInterval))
			timer = tctx.Done()
		}
		select {
		case <-ctx.Done():
		case <-o.wake:
			claimNow = true
		case ev := <-events:
			onEvent(ev)
			// And every other that is waiting, so that the next claim
			// asks for every slot that is free, not for those counted.
			for drained := false; !drained; {
				select {
				case ev := <-events:
					onEvent(ev)
				default:
					drained = true
				}
			}
		case <-timer:
		}
		stop()
	}
	for len(inFlight) > 0 {
		onEvent(<-events)
	}
	return context.Cause(ctx)
}

// forgetTaken drops, from the ops put back here, those due by now whose
// attempt has ended: the claim just made at now found them, or another
// process holds them.
func (o *Outbox) forgetTaken(now time.Time, inFlight flights) {
	o.mu.Lock()
	defer o.mu.Unlock()
	taken := dueFree(o.due, now, inFlight.busy)
	for _, p := range taken {
		heap.Remove(&o.due, p.index) // by index: a removal moves the others
	}
}

// dueCooldown is the least time between a claim and the next one made for
// an op put back here: ops whose backoffs end within a few milliseconds of
// each other go in one claim, not one claim each (4 instances retrying
// after 1 ms claimed 1.5 ops per claim, 2 statements per attempt). A wake
// or a poll claims at once.
const dueCooldown = 5 * time.Millisecond

// dueClaim is when to claim for an op due at next, the last claim made at
// last.
func dueClaim(next, last time.Time) time.Time {
	if c := last.Add(dueCooldown); next.Before(c) {
		return c
	}
	return next
}

// startShared starts the attempt of a claimed op, whose claim holds until
// until, and reports whether it did: an op already in flight here keeps
// its attempt.
func (o *Outbox) startShared(ctx context.Context, stopRun context.CancelCauseFunc, e Entry, until time.Time, inFlight flights, events chan<- slotEvent) bool {
	key := e.Op.Key
	if f, busy := inFlight[key]; busy {
		// Our own lease lapsed (a pause, renewals that failed) and we
		// claimed the op again: the new claim is the running attempt's
		// lease. Giving it back would leave the attempt's renewals with
		// the old one, which the journal reports lost, and the attempt
		// would be cut short and the op sent again.
		//
		// Unless the attempt is past its lease (its op put back, the lease
		// given back, the end not yet told here): then the claim is for
		// the op's next attempt, which starts once this one has ended, and
		// is given back meanwhile; the op stays due here.
		o.mu.Lock()
		ended := f.p.leaseDone
		if !ended {
			f.p.e.Lease, f.p.released = e.Lease, false
		}
		o.mu.Unlock()
		if ended {
			o.shared.release(ctx, e)
			return false
		}
		if !f.cut {
			f.until = until
		}
		return false
	}
	o.mu.Lock()
	p, known := o.ops[key]
	if !known {
		p = &item{index: -1, ageIndex: -1, out: newOutcome()}
		if e.LastError != "" {
			p.err = errors.New(e.LastError)
		}
		o.ops[key] = p
	}
	select {
	case <-p.out.done: // finished here before, redriven elsewhere since
		p.out = newOutcome()
	default:
	}
	if p.index >= 0 {
		heap.Remove(&o.due, p.index)
	}
	p.e, p.released, p.leaseDone = e, false, false
	h := o.handlers[e.Op.Kind]
	gen := o.callStarted(p) // for Stats (stats.go)
	o.mu.Unlock()

	actx, acancel := context.WithCancel(ctx)
	inFlight[key] = &flight{p: p, cancel: acancel, until: until}
	go func() {
		defer func() { events <- slotEvent{key: key, done: true} }()
		err := o.attempt(actx, p, h, func() { events <- slotEvent{key: key} })
		acancel()
		o.mu.Lock()
		if p.call == gen {
			o.callEnded(p)
		}
		e, released := p.e, p.released
		if e.State != Pending {
			p.e.Lease = "" // the journal ended it
		}
		p.leaseDone = true
		if !known {
			// Claimed, not enqueued, here: nobody here waits for it, and
			// another process may run its next attempt.
			delete(o.ops, key)
		}
		o.mu.Unlock()
		if e.State == Pending && !released {
			o.shared.release(ctx, e)
		}
		if err != nil && !errors.Is(err, ErrLeaseLost) {
			stopRun(err)
		}
	}()
	return true
}

// renew extends the leases of the attempts in flight, and cuts short those
// whose lease another process has taken. A failed renewal is tried again
// at the next tick: a lease that lapses meanwhile only lets another
// process claim the op, and our write is then fenced off.
func (o *Outbox) renew(ctx context.Context, inFlight flights, now time.Time) {
	held := make([]Entry, 0, len(inFlight))
	o.mu.Lock()
	for _, f := range inFlight {
		held = append(held, f.p.e)
	}
	o.mu.Unlock()
	until := now.Add(o.shared.lease)
	lost, err := o.shared.j.Renew(ctx, held, until)
	if err != nil {
		return
	}
	for _, f := range inFlight {
		if !f.cut {
			f.until = until
		}
	}
	for _, k := range lost {
		if f, ok := inFlight[k]; ok {
			f.cut = true
			f.cancel()
		}
	}
}

// maxRefresh bounds the keys of one refresh: the ops waited for are
// checked a slice at a time, the map's order varying between polls.
const maxRefresh = 500

// refresh finishes, here, the ops enqueued here that another process
// finished, so that their Waits return.
func (o *Outbox) refresh(ctx context.Context, inFlight flights) error {
	var keys []string
	o.mu.Lock()
	for k, p := range o.ops {
		if len(keys) == maxRefresh {
			break
		}
		if !inFlight.busy(k) && p.e.State == Pending && !p.redrive {
			keys = append(keys, k)
		}
	}
	o.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	es, err := o.shared.j.Get(ctx, keys)
	if err != nil {
		return err
	}
	o.settle(es, inFlight.busy)
	return nil
}

// release gives e's lease back, so that another process may claim the op
// at once. Its failure only leaves the lease to lapse.
func (s *sharedRun) release(ctx context.Context, e Entry) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	_ = s.j.Release(ctx, e)
}
