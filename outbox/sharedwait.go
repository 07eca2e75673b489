package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// settle finishes the ops of es that the journal says finished, and this
// Outbox still holds as pending, but for those busy says it runs: their
// outcome is its own to record. o.mu is not held.
func (o *Outbox) settle(es []Entry, busy func(key string) bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range es {
		p, ok := o.ops[e.Op.Key]
		if !ok || e.State == Pending || p.e.State != Pending || p.redrive || busy(e.Op.Key) {
			continue
		}
		e.Lease = ""
		p.e = e
		p.err = nil
		if e.LastError != "" {
			p.err = errors.New(e.LastError)
		}
		select {
		case <-p.out.done:
		default:
			p.out.res = p.result()
			o.unfinishedDone(p, e.State) // for Stats (stats.go)
			close(p.out.done)
		}
	}
}

// follow polls the journal for key's outcome, at the poll interval, until
// out is done or ctx ends: so that Wait sees an op finish wherever it
// runs, in a process that runs no Run (a web tier that only enqueues) or
// while Run does not look at the op.
func (o *Outbox) follow(ctx context.Context, key string, out *outcome) {
	for {
		w, stop := o.clock.WithTimeout(context.Background(), o.shared.poll)
		select {
		case <-out.done:
			stop()
			return
		case <-ctx.Done():
			stop()
			return
		case <-w.Done():
		}
		stop()
		es, err := o.shared.j.Get(ctx, []string{key})
		if err != nil {
			continue // a journal that fails now may answer at the next poll
		}
		o.settle(es, func(k string) bool {
			p := o.ops[k] // o.mu is held by settle
			return p != nil && p.inCall
		})
	}
}

// adopt reads an op this Outbox does not hold from the shared journal,
// for Wait, and holds it from then on, so that refresh (or a claim here)
// finishes it. It returns nil for a key the journal does not hold either.
func (o *Outbox) adopt(ctx context.Context, key string) (*outcome, error) {
	es, err := o.shared.j.Get(ctx, []string{key})
	if err != nil {
		return nil, fmt.Errorf("outbox: wait: %w", err)
	}
	if len(es) == 0 {
		return nil, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if p, ok := o.ops[key]; ok { // claimed or adopted here meanwhile
		return p.out, nil
	}
	e := es[0]
	e.Lease = ""
	p := &item{e: e, index: -1, ageIndex: -1, out: newOutcome()}
	if e.LastError != "" {
		p.err = errors.New(e.LastError)
	}
	if e.State != Pending {
		p.out.res = p.result()
		close(p.out.done)
	}
	o.ops[key] = p
	return p.out, nil
}

// errEnqueuedElsewhere says that a SharedJournal holds the op being
// enqueued already, as another process enqueued it.
var errEnqueuedElsewhere = errors.New("outbox: enqueued by another process")

// enqueuedElsewhere is what Enqueue makes of a SharedJournal's
// ErrDuplicate for op: the same op, enqueued by another process (a
// client's retry that reached another instance), is enqueued; another op
// under its key is a conflict.
func (o *Outbox) enqueuedElsewhere(ctx context.Context, op Op) error {
	es, err := o.shared.j.Get(ctx, []string{op.Key})
	switch {
	case err != nil:
		return fmt.Errorf("outbox: enqueue: read the op under its key: %w", err)
	case len(es) == 0:
		return ErrDuplicate // gone meanwhile: the journal's answer stands
	}
	old := es[0].Op
	if old.Kind != op.Kind || !bytes.Equal(old.Payload, op.Payload) && es[0].State != Succeeded {
		return ErrKeyConflict
	}
	return errEnqueuedElsewhere
}
