package outbox

import (
	"container/heap"
	"context"
	"fmt"
	"time"

	"github.com/stormguard/retry"
)

// Redrive runs a failed op (a dead letter) again, under its key: it is
// pending again with its attempts reset and a NotAfter one Horizon from
// now; its Reason and LastError stay until its next attempt, and its
// Trace goes on, so that the op's history reads as the dead letter's
// attempts, then the new ones. List the dead letters, with their Traces,
// with [Outbox.DeadLetters]. Over a [SharedJournal] it re-drives any dead
// letter the journal holds, whichever process or transaction enqueued it.
// It fails with [ErrUnknownKey] for a key the Outbox (or its shared
// journal) does not hold, and with an error for an op that has not
// failed.
func (o *Outbox) Redrive(ctx context.Context, key string) error {
	o.mu.Lock()
	p, ok := o.ops[key]
	if !ok && o.shared != nil {
		// A dead letter of another process, or of EnqueueTx, or listed
		// after a restart: the journal holds it, and this Outbox takes it.
		o.mu.Unlock()
		if out, err := o.adopt(ctx, key); err != nil {
			return fmt.Errorf("outbox: redrive: %w", err)
		} else if out != nil {
			o.mu.Lock()
			p, ok = o.ops[key]
		} else {
			o.mu.Lock()
		}
	}
	if !ok {
		o.mu.Unlock()
		return ErrUnknownKey
	}
	if p.e.State != Failed || p.redrive {
		s := p.e.State
		o.mu.Unlock()
		return fmt.Errorf("outbox: Redrive of an op that is %v, not failed", s)
	}
	now := o.clock.Now()
	e := p.e
	e.State, e.Attempts, e.Next, e.LastWait, e.Finished = Pending, 0, now, 0, time.Time{}
	e.Trace.SetStop(retry.StopNone) // the history goes on
	e.Op.NotAfter = now.Add(o.horizon)
	p.redrive = true
	o.mu.Unlock()
	err := o.j.Update(ctx, e)
	o.mu.Lock()
	defer o.mu.Unlock()
	p.redrive = false
	if err != nil {
		return fmt.Errorf("outbox: redrive: %w", err)
	}
	p.e, p.err, p.out = e, nil, newOutcome()
	heap.Push(&o.due, p)
	o.unfinishedAdd(p)
	o.poke()
	return nil
}
