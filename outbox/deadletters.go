package outbox

import (
	"context"
	"fmt"
)

// DeadLetters returns the ops that were given up (State Failed: a
// permanent error, attempts used up, or NotAfter passed), in the order
// they were enqueued, each with its Reason, LastError and Trace, so that a
// person can see what was tried and when before re-driving one with
// [Outbox.Redrive]. It reads the journal, so that a journal shared by
// many processes lists the dead letters of all of them; it is meant for
// a person or an admin endpoint, not a hot path ([Outbox.Stats] counts
// them cheaply).
//
// The entries hold the ops' keys and payloads: show them only to whoever
// may re-drive the ops.
func (o *Outbox) DeadLetters(ctx context.Context) ([]Entry, error) {
	if dj, ok := o.j.(DeadLetterJournal); ok {
		dead, err := dj.DeadLetters(ctx)
		if err != nil {
			return nil, fmt.Errorf("outbox: dead letters: %w", err)
		}
		return dead, nil
	}
	all, err := o.j.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("outbox: dead letters: %w", err)
	}
	dead := all[:0]
	for _, e := range all {
		if e.State == Failed {
			dead = append(dead, e)
		}
	}
	return dead[:len(dead):len(dead)], nil
}
