package outbox

import (
	"slices"
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
	as := markUnfinished(t)
	var wait time.Duration
	if n := len(as); n > 0 && !as[n-1].Start.IsZero() {
		wait = max(next.Sub(as[n-1].Start.Add(as[n-1].Duration)), 0)
	}
	return retry.NewTrace(retry.StopNone, append(as, retry.Attempt{Number: t.Attempts() + 1, Wait: wait, Start: start}))
}

// endAttempt returns t with the outcome of its last attempt, and stop.
func endAttempt(t retry.Trace, d time.Duration, reason string, stop retry.StopReason) retry.Trace {
	as := slices.Collect(t.All())
	if n := len(as); n > 0 {
		as[n-1].Duration, as[n-1].Reason = d, reason
	}
	return retry.NewTrace(stop, as)
}

// stopTrace returns t with stop, an attempt with no outcome marked.
func stopTrace(t retry.Trace, stop retry.StopReason) retry.Trace {
	return retry.NewTrace(stop, markUnfinished(t))
}

// markUnfinished returns t's attempts, the last one marked if its outcome
// was never written: on a pending op, every written outcome but success
// has a Reason.
func markUnfinished(t retry.Trace) []retry.Attempt {
	as := slices.Collect(t.All())
	if n := len(as); n > 0 && as[n-1].Reason == "" && t.Stop() != retry.StopSuccess {
		as[n-1].Reason = noOutcome
	}
	return as
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
