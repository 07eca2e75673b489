package outbox

import (
	"time"

	"github.com/stormguard/retry"
)

// noOutcome is the Reason of an attempt that started but whose outcome was
// never written: the process making it died, or lost the op.
const noOutcome = "no outcome recorded"

// beginAttempt returns t with one more attempt, started at start, for
// the time next that the op was due: its Wait is from the end of the
// attempt before to next, a Retry-After and any snooze included. An
// earlier attempt with no outcome is marked.
func beginAttempt(t retry.Trace, next, start time.Time) retry.Trace {
	markUnfinished(&t)
	var wait time.Duration
	if last := t.Last(); !last.Start.IsZero() {
		wait = max(next.Sub(last.Start.Add(last.Duration)), 0)
	}
	t.Add(retry.Attempt{Number: t.Attempts() + 1, Wait: wait, Start: start})
	t.SetStop(retry.StopNone) // a redriven op goes on
	return t
}

// endAttempt returns t with the outcome of its last attempt, and stop.
func endAttempt(t retry.Trace, d time.Duration, reason string, stop retry.StopReason) retry.Trace {
	if t.Attempts() > 0 {
		last := t.Last()
		last.Duration, last.Reason = d, reason
		t.Add(last)
	}
	t.SetStop(stop)
	return t
}

// stopTrace returns t with stop, an attempt with no outcome marked.
func stopTrace(t retry.Trace, stop retry.StopReason) retry.Trace {
	markUnfinished(&t)
	t.SetStop(stop)
	return t
}

// markUnfinished marks t's last attempt if its outcome was never written:
// on a pending op, every written outcome but success has a Reason.
func markUnfinished(t *retry.Trace) {
	if last := t.Last(); t.Attempts() > 0 && last.Reason == "" && t.Stop() != retry.StopSuccess {
		last.Reason = noOutcome
		t.Add(last)
	}
}

// stopFor is the Trace's stop reason for an op that finished as s, for why.
func stopFor(s State, why string) retry.StopReason {
	switch {
	case s == Succeeded:
		return retry.StopSuccess
	case why == whyNotAfter:
		return retry.StopDeadline
	case why == whyUsedUp:
		return retry.StopExhausted
	}
	return retry.StopNotRetryable
}

// The Reasons the Outbox gives an op it ends itself.
const (
	whyNotAfter = "not after"
	whyUsedUp   = "attempts used up"
)
