// Package retry calls an operation again when it fails, without starting a
// retry storm.
//
// [Do] calls op; when op fails with an error the [Classifier] deems
// transient, Do waits and calls it again. The words: the backoff before
// retry n grows exponentially from [Policy.BaseBackoff] by [Policy.Factor]
// up to [Policy.MaxBackoff]; a [Jitter] turns it into a wait, spread so that
// clients that failed at the same instant do not come back at the same
// instant; a wait the callee asks for ([RetryAfter]) comes on top, within
// the deadline.
//
// Do stops on success; on an error that is not worth retrying ([Permanent],
// context.Canceled, or whatever a custom Classifier says); when
// [Policy.MaxAttempts] are used up; when the next wait would pass
// [Policy.MaxElapsed] or the ctx deadline (at once, rather than after
// sleeping into a certain failure); when a shared [Budget] refuses a retry;
// or when ctx ends, which cuts a wait short. [Trace.Stop] says which, as a
// [StopReason]; the error is a [*StopError] that matches the reason with
// errors.Is ([ErrExhausted], [ErrDeadline], [ErrBudgetExhausted], all three
// [ErrGaveUp], or ctx's error) and still matches the last attempt's error.
// The [Trace] records every attempt and wait, for logs, tests and
// [Policy.OnDone].
//
// The zero [Policy] is ready to use: 4 attempts, a backoff from 200ms
// doubling to 5s under [FullJitter], the [DefaultClassifier] and the real
// clock. A Do inside another Do's op makes one attempt and leaves retrying
// to the outer loop, so that stacked layers do not multiply their attempts.
//
// A Policy holds no per-call state: share one between goroutines freely.
// Tests set [Policy.Clock] to a fake (package retrytest has one) or run
// inside testing/synctest; either way nothing sleeps.
package retry
