// Package retryhttp retries HTTP requests that are safe to repeat, with the
// policy, jitter, deadlines, budget and Trace of package retry.
//
// A [Transport] wraps an [http.RoundTripper]; [NewClient] puts one in an
// [http.Client]. Each attempt sends a copy of the request, with a fresh
// body from Request.GetBody. The Policy's Classifier, [DefaultClassifier]
// unless set, decides which failures are worth another attempt: transient
// network errors, a response head cut short, per-attempt timeouts, and 408,
// 429, 502, 503 and 504. It sees a status of 400 or more as a
// [*StatusError].
//
// Only requests that may be repeated are retried: GET, HEAD, OPTIONS, TRACE,
// PUT and DELETE (RFC 9110 §9.2.2), and any other method only with a
// non-empty idempotency key. A request whose body cannot be rewound is sent
// once. The one exception is a request whose dial failed: it never reached
// a server, so it is retried whatever its method. When attempts run out on
// a retryable status, the last response is returned unread with a nil
// error: status codes are not errors in net/http.
//
// A Retry-After header is a floor. The wait before retry n is the asked
// delay plus the policy's jittered backoff, Retry-After + Policy.Wait(n), so
// that clients told the same time come back spread out rather than in
// lockstep. A Retry-After that would pass MaxElapsed or the ctx deadline,
// or that reaches [Transport.MaxRetryAfter], ends the retrying at once and
// returns that response.
//
// What a hostile server can do is bounded. A response that is retried is
// drained for at most 250ms and 64 KiB, chunked or not, within the time
// the next wait leaves, and closed (one known to be longer is closed
// unread). AttemptTimeout and MaxElapsed bound the wait for each
// response head, Refresh runs within the request's deadlines, and
// credentials are kept per origin: see [Transport.RoundTrip].
//
// Go's http.Transport replays a request by itself when a reused keep-alive
// connection fails before the first byte of a response, if it wrote nothing
// of the request or the request is replayable by its rules: GET, HEAD,
// OPTIONS, TRACE, or a request with an Idempotency-Key or X-Idempotency-Key
// header (a generated key counts, and so, by net/http's own convention, does
// a nil-valued one, which this package does not count). It replays on
// another connection, never after a fresh one fails. Such a replay happens
// inside one attempt of the Transport and is not in the Trace. Redirects are
// followed by http.Client above the Transport: each hop is a request of its
// own, with its own attempts and key.
//
// Inside another retry loop (a retry.Do whose op makes the request) the
// Transport makes one attempt and leaves retrying to the outer loop, and a
// retry loop inside Base does the same for the Transport; see
// retry.Policy.RetryNested and [Transport.RoundTrip]. A key that
// AutoIdempotencyKey makes then belongs to the outer loop's call: each
// outer attempt that sends the same write again sends the same key (see
// [Transport.AutoIdempotencyKey]). [WithTrace] hands a
// request's retry.Trace back, [WithRoute] names it, [WithPolicy] gives it a
// Policy of its own, and [Transport.OnDone] sees each request end.
//
// With [Transport.Stale], a [StaleCache], a GET or HEAD that fails for good
// is answered with the last good response to it, when the origin allowed
// that with Cache-Control: stale-if-error (RFC 5861) or the caller asks
// with [WithStaleIfError]; [IsStale] tells such an answer apart, and its
// Age header says how old it is.
//
// A Transport with a Logger logs one line at Info for each retry and one at
// Warn when it gives up (at Info if the caller canceled): the method, the
// route or the URL reduced to scheme, host and path (no user info, no path
// parameters, any query as "?REDACTED"), the attempt, the status, a fixed
// reason such as "connection refused" (never an error's text, which may
// quote a URL or a secret), the wait, and an idempotency key only as a
// keyed hash. No header or body is logged. While an origin keeps failing,
// [Transport.LogSampling] writes the first 5 lines of each kind and status,
// then one summary a minute of the lines it suppressed; changes of state
// (a budget exhausted, a hold, a circuit breaker opened or closed,
// throttling started or stopped) are written once each.
package retryhttp
