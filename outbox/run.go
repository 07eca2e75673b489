package outbox

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// Run runs pending ops until ctx ends, and returns ctx's cause then (or the
// journal's error, if it fails to write). It runs whatever a previous
// process left pending, each op at its saved next time, at most
// Options.Concurrency at once, and waits for the handler calls it started
// before it returns.
//
// Stopping Run mid-attempt leaves that op pending, never failed: the cancel
// is the outbox's, not the op's. An attempt it cut short (one whose handler
// returned the ctx's error) is not counted; one that ended on its own
// meanwhile is judged and counted as usual; one cut by a crash is counted,
// since nobody can tell what it did. Only one Run of an
// Outbox runs at a time; another fails with [ErrRunning].
//
// Over a [SharedJournal], Run claims due ops under a lease instead of
// running what New loaded; see SharedJournal for polling and leases.
func (o *Outbox) Run(ctx context.Context) error {
	o.mu.Lock()
	if o.bad != nil {
		o.mu.Unlock()
		return o.bad
	}
	if o.running {
		o.mu.Unlock()
		return ErrRunning
	}
	o.running = true
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.running = false
		o.mu.Unlock()
	}()

	if o.shared != nil {
		return o.runShared(ctx) // claims instead of a local heap (shared.go)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A slot is a handler call: an attempt whose handler has returned
	// holds none while its outcome is written (see maxWriting),
	// so that the next calls run during the commit. done tells an
	// attempt's end, after its "called" (false).
	events := make(chan bool, 2*maxWriting*o.concurrency) // never blocks: two per attempt in flight
	inFlight, running := 0, 0
	for ctx.Err() == nil {
		now := o.clock.Now()
		wait := time.Duration(-1)
		o.mu.Lock()
		for running < o.concurrency && inFlight < maxWriting*o.concurrency && o.due.Len() > 0 {
			p := o.due[0]
			if p.e.Next.After(now) {
				wait = p.e.Next.Sub(now)
				break
			}
			heap.Pop(&o.due)
			h, ok := o.handlers[p.e.Op.Kind]
			if !ok {
				o.parked[p.e.Op.Kind] = append(o.parked[p.e.Op.Kind], p)
				continue
			}
			inFlight++
			running++
			gen := o.callStarted(p)
			go func() {
				called := false
				defer func() {
					o.mu.Lock()
					if p.call == gen { // not yet settled, nor run again since
						o.callEnded(p)
					}
					o.mu.Unlock()
					if !called {
						events <- false
					}
					events <- true
				}()
				if err := o.attempt(ctx, p, h, func() { called = true; events <- false }); err != nil {
					cancel(err)
				}
			}()
		}
		o.mu.Unlock()
		var timer <-chan struct{}
		stop := func() {}
		if wait > 0 {
			var tctx context.Context
			tctx, stop = o.clock.WithTimeout(context.Background(), wait)
			timer = tctx.Done()
		}
		select {
		case <-ctx.Done():
		case <-o.wake:
		case done := <-events:
			if done {
				inFlight--
			} else {
				running--
			}
		case <-timer:
		}
		stop()
	}
	for inFlight > 0 {
		if <-events {
			inFlight--
		}
	}
	return context.Cause(ctx)
}

// maxWriting bounds the attempts in flight, as a multiple of Concurrency:
// those whose handler runs, and those whose outcome is being written. At
// 2, a claim of ops that failed was cut to the slots left by the writes
// of the last: a failed attempt over a SharedJournal writes twice. At 4,
// a journal that gathers its writes (pgjournal holds up to two batches,
// one being written and one gathering, 256 writes each) cut the claims of
// a busy Run at a Concurrency of 100.
const maxWriting = 8

// attempt makes one attempt of p, or finishes it without one when it is
// past NotAfter or out of attempts, and writes what happened. It returns an
// error only when the journal fails, which stops Run. called, when not
// nil, is called once the handler has returned and the guards have its
// verdict, before the outcome is written.
func (o *Outbox) attempt(ctx context.Context, p *item, h Handler, called func()) error {
	o.mu.Lock()
	e, budgeted := p.e, p.budgeted
	o.mu.Unlock()
	// Over a SharedJournal, the claim counted this attempt (ClaimRequest.
	// Count): e is the op as it was before, and every path below that
	// makes no attempt writes it back so, giving the count back.
	claimed := o.shared != nil
	if claimed {
		e.Attempts--
	}
	now := o.clock.Now()
	pol := o.policyFor(e.Op.Kind)
	switch {
	case !now.Before(e.Op.NotAfter):
		return o.finish(ctx, p, e, Failed, whyNotAfter, p.err)
	case pol.MaxAttempts > 0 && e.Attempts >= pol.MaxAttempts:
		// Only after a crash cut the last attempt short, or a reload
		// lowered MaxAttempts.
		return o.finish(ctx, p, e, Failed, whyUsedUp, p.err)
	}
	// The guards go first: a refusal is a wait, not an attempt.
	var gc guard.Call
	defer gc.Abandon() // an attempt that does not end in a verdict counts as nothing
	if w, why, ok := o.admit(&gc, &pol, e, now); !ok {
		return o.snooze(ctx, p, e, now.Add(w), why, nil)
	}
	if !budgeted && pol.Budget != nil {
		countSent(pol.Budget, e)
		o.mu.Lock()
		p.budgeted = true
		o.mu.Unlock()
	}

	// The count is durable before the call, so that a crash cannot hide
	// it: the claim wrote it, or this write does.
	prev := e
	e.Attempts++
	e.Trace = beginAttempt(e.Trace, e.Next, now)
	if claimed {
		if ctx.Err() != nil { // stopped before the call: the count goes back
			if err := o.save(context.WithoutCancel(ctx), p, prev); err != nil {
				return err
			}
			return o.requeue(p, prev)
		}
		o.mu.Lock()
		e.Lease = p.e.Lease // as save does: a re-claim may have moved it
		p.e = e
		o.mu.Unlock()
	} else if err := o.save(ctx, p, e); err != nil {
		if ctx.Err() != nil {
			return o.requeue(p, prev) // stopped before the call
		}
		return errors.Join(err, o.requeue(p, prev))
	}
	hctx, release := ctx, context.CancelFunc(func() {})
	if t := pol.AttemptTimeout; t > 0 {
		hctx, release = o.clock.WithDeadline(ctx, now.Add(t))
	}
	start := o.clock.Now()
	sent := o.holdEpoch()
	err := o.call(hctx, &pol, h, e.Op)
	release()
	// The slot is free once the guards and the hold know the verdict
	// (another op of the kind must not start before a hold it asks for),
	// and before the outcome is written.
	free := func() {
		if called != nil {
			called()
			called = nil
		}
	}
	end := o.clock.Now()
	if err == nil {
		o.clearHold(e.Op.Kind, sent)
		pr := retry.Progress{Guard: &gc}
		pol.Succeeded(ctx, &pr)
		free()
		e.Trace = endAttempt(e.Trace, end.Sub(start), "", retry.StopSuccess)
		return o.finish(ctx, p, e, Succeeded, "", nil)
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Cause(ctx))) {
		// Run was stopped and cut the attempt short: the op's fault is
		// unknown, so it stays pending and the cut attempt is given back.
		free()
		prev.Next = end
		if werr := o.save(context.WithoutCancel(ctx), p, prev); werr != nil {
			return werr
		}
		return o.requeue(p, prev)
	}
	// An attempt that ended on its own is judged and counted, even when Run
	// is being stopped meanwhile.
	ctx = context.WithoutCancel(ctx)
	if w, why, ok := uncounted(&pol, err, prev); ok {
		// It did nothing (a snooze, a refusal below, a 409 of an earlier
		// attempt still running): the attempt is given back.
		free()
		return o.snooze(ctx, p, prev, end.Add(w), why, err)
	}
	o.mu.Lock()
	p.err = err
	o.mu.Unlock()
	// The one retry rule, Do's: the Classifier, MaxAttempts, the backoff
	// and jitter, and NotAfter as the deadline. Admission is asked before
	// each attempt above, so the step is asked without the guards' stops.
	a := retry.Attempt{Number: e.Attempts, Wait: e.Trace.Last().Wait, Start: start, Duration: end.Sub(start), Err: err}
	pr := retry.Progress{Attempts: e.Attempts, PrevWait: e.LastWait, Deadline: e.Op.NotAfter, Guard: &gc}
	step := pol
	step.Breaker = nil
	v := step.Next(ctx, &a, &pr)
	gc.End()
	o.mu.Lock()
	p.budgeted = v.Stop == retry.StopNone // Next counted the retry it allowed; one it refused is counted when sent
	o.mu.Unlock()
	o.noteHold(e.Op.Kind, end, v.Decision)
	free()
	why := reason(a.Reason, "error")
	switch v.Stop {
	case retry.StopNone:
	case retry.StopBudget:
		// The Budget refuses a retry now: the op waits its backoff and
		// asks again, uncounted, rather than die for it.
		v.Wait = addWait(v.RetryAfter, backoff(&pol, e))
	case retry.StopNotRetryable:
		why = reason(a.Reason, "permanent")
		e.Trace = endAttempt(e.Trace, end.Sub(start), why, retry.StopNotRetryable)
		return o.finish(ctx, p, e, Failed, why, err)
	case retry.StopExhausted:
		e.Trace = endAttempt(e.Trace, end.Sub(start), why, retry.StopNone)
		return o.finish(ctx, p, e, Failed, whyUsedUp, err)
	default: // StopDeadline: the next wait would pass NotAfter
		e.Trace = endAttempt(e.Trace, end.Sub(start), why, retry.StopNone)
		return o.finish(ctx, p, e, Failed, whyNotAfter, err)
	}
	e.Trace = endAttempt(e.Trace, end.Sub(start), why, retry.StopNone)
	e.Next, e.LastWait = end.Add(v.Wait), pr.PrevWait
	e.Reason, e.LastError = why, errorText(err)
	if werr := o.save(ctx, p, e); werr != nil {
		return werr
	}
	return o.requeue(p, e)
}

// snooze puts e back for next, uncounted, with why as its Reason; err is
// what the handler returned, if it ran. Past NotAfter, the op ends.
func (o *Outbox) snooze(ctx context.Context, p *item, e Entry, next time.Time, why string, err error) error {
	ctx = context.WithoutCancel(ctx)
	if !next.Before(e.Op.NotAfter) {
		return o.finish(ctx, p, e, Failed, whyNotAfter, cmp.Or(err, p.err))
	}
	e.Next, e.Reason = next, why
	if werr := o.save(ctx, p, e); werr != nil {
		return werr
	}
	return o.requeue(p, e)
}

// addWait adds two waits, saturating.
func addWait(a, b time.Duration) time.Duration {
	if s := a + b; s >= a {
		return s
	}
	return time.Duration(1<<63 - 1)
}

func reason(r, def string) string {
	if r == "" {
		return def
	}
	return r
}

// call runs h on a ctx that pol owns (retry.Policy.Own), so that a
// retrying client below (a retryhttp.Transport, a retry.Do in h) makes one
// attempt, leaves retrying to the Outbox, which counts attempts across
// restarts, and does not charge again the Budget, nor ask again the
// Breaker and Throttle, that it shares with the Outbox's policy.
func (o *Outbox) call(ctx context.Context, pol *retry.Policy, h Handler, op Op) error {
	opCtx, done := pol.Own(ctx)
	defer done()
	return callSafe(opCtx, h, op)
}

// callSafe runs h, turning a panic into an error, so that one bad op cannot
// kill the process that runs every other.
func callSafe(ctx context.Context, h Handler, op Op) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return h(ctx, op)
}

// PanicError is the error of an attempt whose handler panicked. The
// Classifier judges it as any other error.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("outbox: handler panicked: %v", e.Value) }

// save writes e and makes it p's state. It writes under p's lease as it
// is now, not as it was when the attempt began: this process may have
// claimed its own running op again after a pause (see startShared), and
// the new claim is the lease. A write that races with that re-claim is
// made again under the new lease.
func (o *Outbox) save(ctx context.Context, p *item, e Entry) error {
	o.mu.Lock()
	e.Lease = p.e.Lease
	o.mu.Unlock()
	// Over a SharedJournal every write of a pending op ends its attempt
	// (the claim counted the attempt, see attempt): a ReleasingJournal
	// gives the lease back in the same write.
	write, releases := o.j.Update, false
	if o.shared != nil && o.shared.rel != nil && e.State == Pending {
		write, releases = o.shared.rel.UpdateRelease, true
	}
	err := write(ctx, e)
	if errors.Is(err, ErrLeaseLost) {
		o.mu.Lock()
		lease := p.e.Lease
		o.mu.Unlock()
		if lease != e.Lease {
			e.Lease = lease
			err = write(ctx, e)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("outbox: journal: %w", err)
	}
	o.mu.Lock()
	// A claim made here once the write had given the lease back moved
	// the op's lease to it (startShared): e keeps the new lease, which is
	// not given back yet.
	moved := p.e.Lease != e.Lease
	e.Lease = p.e.Lease
	p.e = e
	if releases && !moved {
		p.released = true
	}
	o.mu.Unlock()
	return nil
}

// requeue puts p back among the pending ops, as e, under the lease p
// holds now (a claim may have moved it since e was read).
func (o *Outbox) requeue(p *item, e Entry) error {
	o.mu.Lock()
	e.Lease = p.e.Lease
	p.e = e
	heap.Push(&o.due, p)
	o.callEnded(p)
	o.mu.Unlock()
	return nil
}

// finish records p as succeeded or failed and wakes its Waits.
func (o *Outbox) finish(ctx context.Context, p *item, e Entry, s State, why string, err error) error {
	e.State, e.Finished, e.Next = s, o.clock.Now(), time.Time{}
	if e.Trace.Stop() == retry.StopNone {
		e.Trace = stopTrace(e.Trace, stopFor(s, why))
	}
	if s == Failed {
		e.Reason = why
		if err != nil {
			e.LastError = errorText(err)
		}
	}
	if werr := o.save(context.WithoutCancel(ctx), p, e); werr != nil {
		// Not recorded: the op stays pending for the next process.
		return errors.Join(werr, o.requeue(p, p.e))
	}
	o.mu.Lock()
	p.err = err
	p.out.res = p.result()
	if s == Succeeded {
		// Done with: its payload is the journal's business now, and an
		// Outbox that runs for months must not hold every payload it ran.
		// (Enqueueing the op again compares only its Kind, as for an op
		// compacted after it succeeded.)
		p.e.Op.Payload = nil
	}
	o.callEnded(p)
	o.unfinishedDone(p, s)
	close(p.out.done)
	o.forgetExpired(e.Finished)
	o.mu.Unlock()
	return nil
}

// sweepEvery is how often forgetExpired looks at every op.
const sweepEvery = time.Hour

// forgetExpired drops the ops that succeeded longer than the retention
// ago, as the journal forgets them, so that an Outbox that runs for months
// does not hold every op it ran. It looks at most once every sweepEvery,
// from the finish of an op: one pass over the ops an hour. o.mu is held.
func (o *Outbox) forgetExpired(now time.Time) {
	var shrunk bool
	o.ops, shrunk = sweep(o.ops, &o.swept, now, func(p *item) bool {
		return p.index < 0 && !p.adding && expired(&p.e, now)
	})
	if shrunk { // and the heaps' slices, with what they held
		o.due = clipHeap(o.due)
		o.byAge = clipHeap(o.byAge)
	}
}
