// Package retry calls an operation again when it fails, without starting a
// retry storm.
//
// [Do] calls op until it succeeds or its [Policy] says to stop: an error
// the [Classifier] will not retry, MaxAttempts used up, a next wait that
// would pass MaxElapsed or the ctx deadline, a refusal by a guard of
// package guard (a Budget, a Throttle, a Breaker), or ctx ending. The
// backoff grows from BaseBackoff by Factor up to MaxBackoff, and a
// [Jitter] spreads it so that clients that failed together do not return
// together. The [Trace] records every attempt; the error is a [*StopError]
// that matches both why Do stopped and the last attempt's error.
//
// The zero Policy works (4 attempts, 200ms doubling to 5s) and may be
// shared. A Do inside another Do's op leaves retrying to the outer loop.
// [Policy.Next] is one step of Do's rule, for loops Do cannot run. Tests
// set [Policy.Clock] to a fake (package retrytest) or use synctest.
package retry
