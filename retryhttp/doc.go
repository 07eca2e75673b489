// Package retryhttp retries HTTP requests that are safe to repeat, with the
// policy, jitter, deadlines and Trace of package retry.
//
// A [Transport] wraps an [http.RoundTripper]; [NewClient] puts one in an
// [http.Client]. Each attempt sends a copy of the request, with a fresh
// body from Request.GetBody. [Transport.Classify], [DefaultClassify] unless
// set, decides which failures are worth another attempt: transient network
// errors, per-attempt timeouts, and 408, 429, 502, 503 and 504.
//
// Only requests that may be repeated are retried: GET, HEAD, OPTIONS, TRACE,
// PUT and DELETE (RFC 9110 §9.2.2), and any other method only with an
// idempotency key. A request whose body cannot be rewound is sent once. When
// attempts run out on a retryable status, the last response is returned
// unread with a nil error: status codes are not errors in net/http.
//
// A Retry-After header is a floor. The wait before retry n is the asked
// delay plus the policy's jittered backoff, Retry-After + Policy.Wait(n), so
// that clients told the same time come back spread out rather than in
// lockstep; with the default full jitter it is uniform in [Retry-After,
// Retry-After + min(MaxBackoff, BaseBackoff·Factor^(n−1))). A Retry-After that
// would pass MaxElapsed or the ctx deadline, or that reaches
// [Transport.MaxRetryAfter], ends the retrying at once and returns that
// response.
//
// Go's http.Transport replays a request by itself when a reused keep-alive
// connection fails before the first byte of a response, if it wrote nothing
// of the request or the request is replayable by its rules: GET, HEAD,
// OPTIONS, TRACE, or a request with an Idempotency-Key or X-Idempotency-Key
// header (a generated key counts). It replays on another connection, never
// after a fresh one fails. Such a replay happens inside one attempt of the
// Transport and is not in the Trace; it never repeats a request that is not
// safe to repeat, so a POST without a key still reaches the server at most
// once. Redirects are followed by http.Client above the Transport: each hop
// is a request of its own, with its own attempts and key.
//
// Inside another retry loop (a retry.Do whose op makes the request) the
// Transport makes one attempt and leaves retrying to the outer loop, and a
// retry loop inside Base does the same for the Transport; see
// retry.Policy.RetryNested. [WithTrace] hands a request's retry.Trace back.
//
// A Transport with a Logger logs one line at Info for each retry (method,
// URL, attempt, status or error, reason, wait) and one at Warn when it gives
// up (at Info if the caller canceled). The URL is logged without user info
// and with every query value replaced by REDACTED; no header or body is
// logged, and an idempotency key only as a short SHA-256 fingerprint.
package retryhttp
