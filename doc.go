// Package retry calls an operation again when it fails, without starting a
// retry storm.
//
// [Do] calls op; when op fails with an error the [Classifier] deems
// transient, Do waits and calls it again. Each wait grows exponentially from
// [Policy.BaseBackoff] by [Policy.Factor] up to [Policy.MaxBackoff], and a
// [Jitter] spreads it so that clients that failed at the same instant do not
// come back at the same instant. A wait the callee asks for ([RetryAfter]) is
// honoured, within the deadline.
//
// Do stops on success; on an error that is not worth retrying ([Permanent],
// context.Canceled, or whatever a custom Classifier says); when
// [Policy.MaxAttempts] are used up; when the next wait would pass
// [Policy.MaxElapsed] or the ctx deadline (at once, rather than after
// sleeping into a certain failure); when a shared [Budget] refuses a retry;
// or when ctx ends, which cuts a wait short. The error it returns says why
// with errors.Is ([ErrExhausted], [ErrDeadline], [ErrBudgetExhausted], or
// ctx's error) and still matches the last attempt's error. The [Trace] it
// returns records every attempt and wait, for logs and tests.
//
// The zero [Policy] is ready to use: 4 attempts, waits from 200ms doubling to
// 5s under [FullJitter], the [DefaultClassifier] and the real clock. A Do
// inside another Do's op makes one attempt and leaves retrying to the outer
// loop, so that stacked layers do not multiply their attempts.
//
// A Policy holds no per-call state: share one between goroutines freely.
// Tests inject a fake clock through [Policy.Clock] (package retrytest has a
// ready one) or run inside testing/synctest; either way nothing sleeps.
package retry
