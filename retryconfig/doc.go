// Package retryconfig reads named retry policies from a document, so that
// retries can be tuned per call type, and changed while a service runs,
// without a rebuild.
//
// A document is JSON:
//
//	{
//	  "budgets": {
//	    "payments": {"maxTokens": 10, "tokenRatio": 0.1}
//	  },
//	  "policies": {
//	    "default":  {"maxAttempts": 4, "baseBackoff": "200ms", "maxBackoff": "5s"},
//	    "feed":     {"maxAttempts": 6, "jitter": "decorrelated", "maxElapsed": "30s"},
//	    "payments": {"maxAttempts": 2, "baseBackoff": "0.2s", "attemptTimeout": "2s",
//	                 "retryableStatusCodes": [503], "budget": "payments"}
//	  }
//	}
//
// A policy's fields are those of [retry.Policy] in lowerCamel case, each
// optional (a missing field means the Policy's default): maxAttempts,
// baseBackoff, factor, maxBackoff, maxElapsed, attemptTimeout, jitter
// ("full", "equal", "decorrelated", "none", or "band:0.3" for
// [retry.BandJitter] with that spread), retryableStatusCodes, quota
// (retryhttp's quota mode: "hold", "spread" or "off"; see
// [Config.HTTPQuota]), budget (the name of a member of "budgets"), breaker
// (of "breakers"), throttle (of "throttles"), hedging (see [Hedging]) and
// staleIfError (a positive duration: the age up to which the policy's HTTP
// GET and HEAD requests accept a stored response in place of a failure,
// see [Config.StaleIfError]). Durations are strings in Go's form, which
// includes the proto3 JSON form: "200ms", "1.5s", "0.2s", "1m30s". A bare
// number is an error, not a guess at a unit.
// maxAttempts 0 is an error too: write 1 for no retries, or leave the field
// out for the default.
//
// retryableStatusCodes replaces the default list of its integration, it does
// not add to it: numbers are HTTP statuses (for retryhttp), strings are gRPC
// code names such as "UNAVAILABLE" (for retrygrpc); see
// [Config.HTTPStatusCodes] and [Config.GRPCCodes].
//
// A budget is a [guard.Budget] that every policy naming it shares, so that
// payments' retries stop when payments is failing, whatever the call type.
// Its fields are those of [guard.BudgetOptions] in lowerCamel case: a
// token bucket's maxTokens and tokenRatio (gRFC A6), or a ratio budget's
// ratio, minPerSecond and ttl (a duration), as in
// {"ratio": 0.2, "minPerSecond": 10, "ttl": "10s"}; the two kinds do not
// mix. A field left out has guard's default; a 0 written out is an error.
// Breakers and throttles are declared and shared the same way:
//
//	"breakers": {
//	  "payments": {"failureRatio": 0.5, "minCalls": 20, "window": "30s", "openFor": "10s", "probes": 3}
//	},
//	"throttles": {
//	  "payments": {"k": 2, "window": "2m", "minRequests": 20, "maxReject": 0.9}
//	}
//
// A breaker's fields are those of [guard.BreakerOptions] in lowerCamel case
// (failureRatio, minCalls, window, openFor, probes, countAttempts), a
// throttle's those of [guard.ThrottleOptions] (k, window, minRequests,
// maxReject), each checked as [guard.NewBreaker] and [guard.NewThrottle]
// check it. A field left out has the default that its option's zero stands
// for; a 0 written out is an error, since "minCalls": 0 reads as a breaker
// that needs no calls, not as the default. A policy names them with
// "breaker": "payments" and "throttle": "payments", and gets the
// [guard.Breaker] and [guard.Throttle] in its Breaker and Throttle fields.
//
// A policy may declare faults to inject into its calls, for a game day
// (see package chaos), as a list under "chaos":
//
//	"orders": {"maxAttempts": 4, "chaos": [
//	  {"rate": 0.2, "status": 503, "header": {"Retry-After": "1"}},
//	  {"name": "slow", "rate": 0.1, "latency": "200ms"},
//	  {"rate": 0.05, "drop": true}
//	]}
//
// A fault's fields are those of [chaos.Fault] in lower case (name, rate,
// status, header, latency, drop; rate is required), checked as
// [chaos.Fault.Validate] checks them; its errors match
// chaos.ErrInvalidFault too. The document only declares the faults: the
// program arms them with a chaos.Switch of its own, off until it turns it
// on, through [Config.Chaos], or [Live.ChaosTransport] and
// [Live.ChaosHandler], which follow reloads, so that a game day is a
// config change on a running service that opted in.
//
// [Parse] validates the whole document: an unknown field (a typo), a bad
// value or a reference to a missing budget, breaker or throttle anywhere
// rejects all of it, with an error that names the path, such as
// `policies.payments.maxBackoff: "5" has no unit` or
// `breakers.payments.failureRatio: 1.5 is not in (0, 1]`. Errors about a
// policy's fields match [retry.ErrInvalidPolicy] with errors.Is.
// [ParseServiceConfig] reads a gRPC service config (gRFC A6) into the same
// [Config].
//
// [Config.Policy] returns the named policy, else "default", else the zero
// Policy. A Config never changes once parsed; [Live] holds the current one
// and swaps it atomically on [Live.Update], so that a reload never changes a
// call in flight. A budget, breaker or throttle whose fields did not change
// is the same object after a reload, with its state: a budget keeps its
// tokens, an open breaker stays open, a throttle keeps its counts. One
// whose fields changed, compared as written (a field left out differs
// from one written at its default), is a new one. [Live.Subscribe] calls a
// func after each update that Live accepts, in order of versions, before
// Update returns.
//
// Environment variables and flags can override single fields of a
// document: see [Overrides]. The precedence is flag > environment > file >
// the Policy's default.
package retryconfig
