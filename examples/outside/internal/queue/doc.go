// Package queue retries a message-queue client's Publish without starting
// a retry storm, and is written only against the exported API of
// github.com/stormguard/retry: it shows that a third party can drive the
// library's retry rule for a kind of call that retry.Do does not run.
//
// A [Publisher] wraps a [Client]. Each [Publisher.Publish] runs a loop of
// its own: before each attempt it waits while the topic is held back
// ([guard.Holds]: a broker that answered [*OverloadedError] with a wait
// holds back every publish to that topic, not only the one it answered),
// then admits the attempt through a [guard.Call] with the topic's Breaker
// and Throttle; after a failed attempt it asks [retry.Policy.Next], the one
// step of [retry.Do]'s rule, whether to retry and how long to wait, and
// waits on the Policy's Clock. So the Classifier ([Classify] by default),
// MaxAttempts, the backoff and its jitter, MaxElapsed, the Budget and the
// Breaker stop it for the same reasons, in the same order, as they stop
// Do, and its errors match the same sentinels ([retry.ErrExhausted],
// [retry.ErrBreakerOpen], …).
//
// Options.Guards gives each topic a Budget, a Breaker and a Throttle of
// its own, taken with [retry.Policy.WithGuards], so that one topic's
// trouble does not shed the others' messages. With a Logger, a Publisher
// watches its breakers and throttles and logs each change of state.
//
// Publish returns the [retry.Trace] of its attempts, built with
// [retry.NewTrace], and hands it to Policy.OnDone, where the observers of
// package retrydebug and retryotel take it, as they take retry.Do's.
//
// A Publisher is safe for concurrent use. It never closes its Client,
// which belongs to the caller.
//
// The package is internal to its module so that an example is not taken
// for a supported API; a test checks that the module imports nothing
// internal to the library, which Go's own rule would allow here.
package queue
