// Package idempotency is HTTP server middleware that runs each request with
// an idempotency key once, and replays its saved response to every retry.
//
// It is the server half of the IETF draft "The Idempotency-Key HTTP Header
// Field" (draft-ietf-httpapi-idempotency-key-header), in the manner of
// Stripe's API (https://docs.stripe.com/api/idempotent_requests) and of
// Brandur Leach's "Implementing Stripe-like Idempotency Keys in Postgres"
// (https://brandur.org/idempotency-keys). The client half is
// retryhttp.Transport with AutoIdempotencyKey, which sends one key on every
// attempt of a POST: with both, a retried POST has its effect once.
//
// # How a request is answered
//
// Requests whose method is not in Options.Methods (POST and PATCH by
// default) pass through untouched, as do requests without a key unless
// Options.Required is set. For a request with a key, in this order:
//
//   - 400 if the key is missing (Required), sent twice, empty, longer than
//     [MaxKeyLength], or neither an RFC 9110 token nor an RFC 8941
//     sf-string. The quoted form of the draft ("8e03…") and the bare form
//     (8e03…) are the same key.
//   - 413 if the body is larger than Options.MaxBodyBytes; the body is read
//     in full otherwise, to fingerprint the request.
//   - 503 with Retry-After if the store fails, or has not answered within
//     Options.StoreTimeout: the handler does not run, since nothing can
//     tell whether the key ran before. The middleware keeps StoreTimeout
//     itself, whatever the store does with its ctx. A Claim that failed
//     may have been made with its reply lost, so the middleware releases
//     it (fenced by its token): the retry finds the key free.
//   - 422 if the key was used for a different request: another method,
//     path, query, Content-Type or body. This is checked first, whether
//     that request is finished or still running.
//   - 409 with Retry-After if the same request is still running. It never
//     waits for that request and never runs the handler.
//   - The saved response, replayed byte for byte (status, the headers the
//     handler set, body) with Idempotent-Replayed: true, if the same
//     request has finished. The handler does not run.
//   - Otherwise the request claims the key and the handler runs.
//
// Errors are RFC 9457 problem details (application/problem+json); 409 and
// 503 carry Retry-After: 1.
//
// # What is saved
//
// The handler's response is held until the handler returns, then saved
// with the key, then sent: a response is never sent before a retry could
// get it replayed. (If the store fails at that point, the response is sent
// anyway, since the work is done, and the key stays claimed until its
// lease runs out.) Its status decides, through Options.Retryable
// ([DefaultRetryable]: 408, 429 and every 5xx): a response that means
// "nothing was done, try again" is sent but not saved, and the key is
// released, so that a retry runs the handler again. Every other response,
// 4xx included, is saved for Options.TTL (24h) and replayed; a retry of a
// 400 gets the same 400. A handler that panics is treated as one that did
// nothing: the key is released and the panic goes on. So a handler that has
// committed its effects must answer with a saved status, and should make
// its effects one transaction with its answer where it can.
//
// A replay carries the status, the body, the trailers and every header
// the handler set but these, which belong to the session of the caller
// who got the first response: Set-Cookie (and Set-Cookie2),
// Authentication-Info and Proxy-Authentication-Info. They are never saved,
// so that a caller who has the key but not the session cannot get it.
// Headers set after the status was written are not saved, as net/http does
// not send them, except trailers: the names that the Trailer header
// declared and names set with http.TrailerPrefix, which are sent and
// saved as net/http sends them.
//
// A response body larger than Options.MaxResponseBytes is not held: once
// the handler writes past the limit, what it wrote is sent and the rest
// streams to its client as it is written, while the request keeps its key.
// When the handler returns, the status and headers are saved, without the
// body or trailers. A replay of it has the original status and headers
// (but Content-Length and Trailer), no body, and Idempotent-Body-Omitted:
// true: the handler does not run twice, but the retry does not get the
// body. A handler that panics mid-stream releases the key, as any panic
// does. Such a response is sent before it is saved: if the process dies
// mid-stream, the key is free one lease later and the retry runs the
// handler again. Raise the limit for endpoints whose large responses must
// be replayed. If the lease was lost before the body passed the limit,
// none of it is sent; the claim is settled all the same, as for a small
// response: saved, if nobody took the key over, and the client gets what a
// replay would send.
//
// # The handler's ctx
//
// Once a request holds its key, its handler runs to its end whatever its
// client does: its ctx keeps the request's values but not its
// cancellation, so a client that drops its connection or gives up (an
// attempt timeout shorter than the handler) does not cancel work in
// progress. Its result is saved, and the retry that follows gets it. Had
// the ctx ended, the handler would most likely fail half-way with a 5xx,
// the key would be released, and the retry would do again what had been
// done. The ctx ends at Options.HandlerTimeout (1m), with
// context.DeadlineExceeded, and when the lease is lost, with cause
// [ErrLeaseLost]. Options.CancelOnDisconnect restores net/http's rule (the
// ctx ends with the client) for handlers whose every step rolls back when
// it ends.
//
// # Leases and crashes
//
// A request holds its key for Options.Lease (10s, or the TTL if shorter),
// renewed every Lease/3 while the handler runs, so a slow handler never
// loses its key. If the process dies mid-request, nothing renews the lease
// and the key is free one Lease later, not one TTL later. Each claim has a
// fencing token. If no renewal succeeds for a Lease after the start of the
// store call that last granted it (a store outage longer than the lease),
// the handler's ctx ends with cause [ErrLeaseLost]. When the handler
// returns, its result is saved if nobody claimed the key in between;
// otherwise it is not saved over the result of the request that took the
// key over, and its client is answered 409, so that its retry gets that
// result.
//
// A takeover cannot undo what the first handler did before its lease was
// lost. A handler without recovery points (steps whose completion it
// records with the key, in the same transaction as their effect, and
// skips when it runs again: see Brandur Leach's article above) then does
// its effects twice: once in the request that lost the lease, once in the
// one that took the key over. Keep handlers far shorter than the lease,
// stop at ctx's end, and record the key with the effect (a unique
// constraint on it in the table the handler writes) where a second run
// must not happen.
//
// # Scope
//
// A key belongs to a scope, Options.Scope. By default it is a digest of
// every credential the request carries: the Authorization,
// Proxy-Authorization, Cookie and X-API-Key headers and the TLS client
// certificate, so that a result is never replayed to a session that the
// middleware can tell from the first. A result is never replayed to
// another scope, and the same key in two scopes is two requests. The
// default's cost is a second run when a credential changes between two
// attempts (a refreshed token, a rewritten cookie), and its limit is that
// callers without any of these credentials share one scope. A service that
// knows its authenticated principal should scope by it (see the example
// of Options.Scope): the user or account id. Store keys are digests of
// scope and key, so no client text reaches the store (see [Store]).
//
// # Observing
//
// Options.OnDone is called once for each keyed request with a [Summary]:
// its [Outcome] (executed, replayed, in flight, mismatch, rejected, store
// failed, released, lease lost), the status sent, the time taken and the
// time spent in the store. It holds no key, scope or header, so it is safe
// to log and to count by.
//
// # Stores
//
// The default store, [MemoryStore], serves one process and is bounded in
// keys and bytes, in all and for each scope. Processes that serve the same clients need a shared
// store, such as the one of package
// github.com/stormguard/retry/idempotency/redisstore; the [Store] interface
// says what any other must do.
//
// A store beside the service's database leaves a window: a process that
// dies after the handler committed and before the result reached the store
// runs the handler again on the retry. Package
// github.com/stormguard/retry/idempotency/pgstore closes it: its handlers
// take their [Lease] from [FromContext] and save their response in their
// own PostgreSQL transaction, with their rows. The middleware then sends
// the response it sees saved without saving it again ([Lease.Result]).
//
// # Limits
//
// The handler's response is buffered (up to MaxResponseBytes), and its
// request body was read in full before it ran, so its ResponseWriter
// offers none of http.ResponseController's features: Flush, Hijack,
// SetReadDeadline, SetWriteDeadline and EnableFullDuplex all return an
// error matching http.ErrNotSupported. Mount handlers that stream, upgrade
// (WebSocket) or need full duplex outside the middleware. Its
// ResponseWriter starts with an empty header map: headers that outer
// handlers set (a request id, CORS) stay on the response but are not
// saved, so a replay gets them anew. Redirects, conditional requests and
// content negotiation are replayed as they were first answered.
//
// # How it differs from Stripe and the draft
//
// Where Stripe's API (https://docs.stripe.com/api/idempotent_requests)
// and the draft differ from this package, and what each difference costs:
//
//   - Which responses are saved. Stripe saves the status and body of the
//     first response once an endpoint has begun to run, 500s included,
//     and saves nothing for a request that failed validation; the draft
//     has a retry get "the result of the previously completed operation,
//     success or an error". This package saves every status but those
//     that Options.Retryable calls "nothing was done" (408, 429, 5xx),
//     4xx validation failures included. So a handler that answers 5xx
//     after committing an effect runs again on the retry (a second run):
//     answer 5xx only after a rollback, or set Retryable to save 5xx, as
//     Stripe does, at the cost of replaying a transient failure for a day.
//   - Panics: Stripe does not say; here a panic releases the key, as a
//     5xx does, with the same cost for a handler that panics after an
//     effect.
//   - The key: the draft makes it an RFC 8941 sf-string; this package
//     also takes the bare form that Stripe's clients send, and limits it
//     to 255 bytes, as Stripe does.
//   - The fingerprint, which the draft leaves optional, is always made
//     (method, path, query, Content-Type and body); a reuse answers 422
//     as the draft says (Stripe answers with an error of type
//     idempotency_error).
//   - A request while the first still runs gets 409, as in the draft and
//     at Stripe, with Retry-After: 1, which neither specifies.
//   - A replay is marked Idempotent-Replayed: true, as at Stripe, and
//     carries neither Set-Cookie nor the other session headers above.
//   - A takeover after a lost lease (above) has no counterpart in either:
//     it costs a second run for a handler without recovery points.
//
// For a shared store, what the store itself can lose (a Redis that evicts
// or fails over) is in package redisstore's doc.
package idempotency
