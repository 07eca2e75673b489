// Package guards lets the packages beside retry watch the changes of state
// of a retry.Breaker and a retry.Throttle (and of the keyed
// retry.Breakers and retry.Throttles), to log them once each and count
// them, without widening retry's exported API. Package retry sets the
// functions when it is initialised, so they are never nil in a program
// that imports it; their target is a *retry.Breaker, *retry.Breakers,
// *retry.Throttle or *retry.Throttles, which this package cannot name.
package guards

// A Change is one change of state of a breaker or a throttle.
type Change struct {
	// Key is the key of the breaker or throttle in its Breakers or
	// Throttles, or "" for one made alone.
	Key string
	// Breaker says the change is a breaker's: From and To are its states
	// (the values of retry.BreakerState). Otherwise it is a throttle's, and
	// On says whether it started shedding (true) or stopped.
	Breaker  bool
	From, To uint8
	On       bool
}

var (
	// Watch calls f for each change of state of target from now on,
	// under id: watching again under the same id replaces f. A target
	// holds a few watchers at most (16); Watch reports false when target
	// is full or is not a breaker or a throttle. f is called
	// synchronously, in the order of the changes, by whatever call made
	// the change; it must be quick and must not call back into target.
	Watch func(target, id any, f func(Change)) bool
	// Unwatch removes the watcher of id from target.
	Unwatch func(target, id any)
	// MarkFailed marks the *retry.Decision d, a refusal to retry an
	// attempt that the Classifier would have retried, so that the
	// Throttle and the Breaker count the attempt as failed: the service
	// failed it, though a rule of the integration (a request not safe to
	// repeat) keeps it from being retried.
	MarkFailed func(d any)
)
