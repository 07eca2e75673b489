// Package chaos injects faults on purpose — error statuses, errors, added
// latency and answers lost after the server acted — so that a service's
// retries, timeouts, budgets, breakers, idempotency keys and outbox can be
// proved together, in a test, in staging or on a game day, before an outage
// does it.
//
// A [Fault] says what to inject and how often: a status (with headers, such
// as a Retry-After), an error, added latency, or Drop, an answer lost after
// the handler ran, the failure that idempotency keys exist for. [Transport]
// injects on the client side of net/http, [Handler] on the server side; the
// retrygrpc module has interceptors that read the same Faults, and
// retryconfig reads them per policy name from a document. Faults are off
// unless a program turns them on: each Fault names the [Switch] that arms
// it, a Fault without one never fires, and a Switch is off until
// [Switch.On]. An injector whose switches are off costs one atomic load per
// request and allocates nothing.
//
// The faults are drawn, not random: the draws of the n-th request an
// injector sees are a hash (SplitMix64) of the Switch's seed, the injector
// and n, so that the same seed and the same requests give the same faults
// on every run. Requests that run concurrently reach an injector in an
// order the scheduler picks, so which request is the n-th may change from
// run to run; the faults that the first N requests get between them, and
// so the counts of [Switch.Stats], do not (unless a Fault's Match tells the
// requests apart).
//
// The same idea, as other systems have it: Polly's chaos strategies (once
// the Simmy library), Envoy's fault injection filter
// (https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/fault_filter),
// and the game days of the SRE book's chapter on testing for reliability.
package chaos
