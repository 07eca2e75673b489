package outbox

import (
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// The Outbox's holds are Options.Guards.Holds, by op kind: an attempt
// whose answer asks for a wait (a Retry-After, a retry.RetryAfter error)
// holds back every op of its kind until then, as a retryhttp.Transport
// holds back an origin, so that a rate-limited API is not sent the rest of
// the queue only to say the same thing again; the next answer of that kind
// that is not a failure, to an attempt sent after the hold began, ends it.

// holdEpoch is the holds' epoch for an attempt about to be sent.
func (o *Outbox) holdEpoch() guard.HoldEpoch {
	if o.guards.Holds == nil {
		return 0
	}
	return o.guards.Holds.Epoch()
}

// noteHold holds kind back for the wait that d, the verdict on an attempt
// that ended at end, asks for, at most maxRetryAfter.
func (o *Outbox) noteHold(kind string, end time.Time, d retry.Decision) {
	if h := o.guards.Holds; h != nil && d.Retry && d.RetryAfter > 0 {
		h.Hold(kind, end, min(d.RetryAfter, maxRetryAfter))
	}
}

// clearHold ends kind's hold after a success of an attempt sent at sent.
func (o *Outbox) clearHold(kind string, sent guard.HoldEpoch) {
	if h := o.guards.Holds; h != nil && h.Held() {
		h.Clear(kind, sent)
	}
}
