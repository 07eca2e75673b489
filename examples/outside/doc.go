// Package outside is a worked integration of github.com/stormguard/retry
// written the way a third party would write one: from the exported API
// alone, in a module of its own that requires the library's modules at a
// released version.
//
// Its package queue (internal, so that an example is never mistaken for a
// supported API) wraps a message-queue client's Publish in a retry loop of
// its own, driven by retry.Policy.Next, the one step of retry.Do's rule,
// with per-topic guards (a Budget, a Breaker and a Throttle taken through
// Policy.WithGuards), guard.Holds for a broker that asks to be left alone
// for a while, watchers that log the guards' changes of state, and the
// Trace of each call handed to both observers, retrydebug and retryotel.
// A test checks that it imports nothing internal to the library.
package outside
