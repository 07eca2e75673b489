// Package guard holds the guards that keep a fleet's retries from turning
// a failing service's trouble into an outage: a [Budget] that limits
// retries (gRFC A6's token bucket, or a ratio of recent first attempts
// with a floor, as Finagle's retry budget), a [Throttle] that sheds attempts while
// the service rejects many (the client-side throttling of Google's SRE
// book), a [Breaker] that fails calls fast while it is down, and [Holds]
// that keep every attempt to a target back while it asked for a pause (a
// Retry-After, a gRPC pushback), and a [Limiter], a bulkhead that bounds
// the attempts in flight to a service. [Budgets], [Breakers], [Throttles]
// and [Limiters] keep one of each per key (an origin, a target, a kind of
// op), bounded in keys, and [Keyed] is how every integration takes them.
//
// A guard decides and counts; it never sleeps and never sends. A retry
// loop asks it through a [Call], one per logical call: [Call.Admit] before
// each attempt, [Call.Succeeded] or [Call.Attempted] after it, and [Call.End]
// when the call is over. package retry's Do does so for a Policy's guards;
// an integration of another kind of call (a queue, a database) does the
// same from this exported API alone.
//
// Changes of state (a breaker that opens, a throttle that starts to shed)
// reach whoever [Breaker.Watch]es them, once each, in order. Every type is
// safe for concurrent use, and every zero value works, with the defaults
// its options document.
package guard
